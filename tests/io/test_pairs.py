"""``--pairs`` files as editors and sequencers leave them: a byte-order mark, CRLF, comments,
record names holding '#'; and the strand column syntenic reads."""

from __future__ import annotations

import pytest

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.pairs import read_distinct_pairs, read_pairs_file, read_stranded_pairs


def test_a_byte_order_mark_and_crlf_are_not_part_of_the_first_id(tmp_path):
    # Windows editors save UTF-8 with a BOM: before, the first query id read '\ufeffq1'.
    path = tmp_path / "pairs.txt"
    path.write_bytes("\ufeffq1\tt1\r\nq2 t2\r\n".encode("utf-8"))
    assert read_pairs_file(path, ["q1", "q2"], ["t1", "t2"]) == [("q1", "t1"), ("q2", "t2")]


def test_a_hash_inside_a_record_name_is_no_comment(tmp_path):
    # Illumina's older read names hold '#' ('HWUSI-EAS100R:6:73:941:1973#0/1'): before, the line
    # was cut there and refused as 'expected two ids'. A '#' starting a word still starts a comment.
    path = tmp_path / "pairs.txt"
    path.write_text("# query target\nHWUSI:6:73:941:1973#0/1 chr#2  # a note\n  #indented comment\n")
    assert read_pairs_file(path, ["HWUSI:6:73:941:1973#0/1"], ["chr#2"]) == \
        [("HWUSI:6:73:941:1973#0/1", "chr#2")]


def test_a_strand_column_is_read_and_a_line_without_one_is_plus(tmp_path):
    # gpualign best-pairs writes 'QUERY TARGET STRAND'; older pairs files have two columns.
    path = tmp_path / "pairs.txt"
    path.write_text("q1\tt1\t-\nq2 t2\nq1 t1 +  # the other strand\nq2 t2\n")
    assert read_stranded_pairs(path, ["q1", "q2"], ["t1", "t2"]) == \
        [("q1", "t1", "-"), ("q2", "t2", "+"), ("q1", "t1", "+"), ("q2", "t2", "+")]
    # Each pair once: 'q2 t2' twice is one pair, 'q1 t1' on both strands is two.
    assert read_distinct_pairs(path, ["q1", "q2"], ["t1", "t2"], stranded=True) == \
        [("q1", "t1", "-"), ("q2", "t2", "+"), ("q1", "t1", "+")]


@pytest.mark.parametrize("line, message", [
    ("q1 t1 x", "pairs.txt: line 2: strand 'x' is not '+' or '-'"),
    ("q1 t1 minus", "pairs.txt: line 2: strand 'minus' is not '+' or '-'"),
    ("q1 t1 - extra", "pairs.txt: line 2: expected two ids and an optional strand"),
])
def test_a_bad_strand_column_names_the_file_line_and_value(tmp_path, line, message):
    path = tmp_path / "pairs.txt"
    path.write_text(f"q1 t1 -\n{line}\n")
    with pytest.raises(InputError) as error:
        read_stranded_pairs(path, ["q1"], ["t1"])
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_two_column_reader_refuses_a_strand_column_and_says_who_reads_it(tmp_path):
    # pairwise and batch read two columns: a third is refused rather than silently ignored.
    path = tmp_path / "pairs.txt"
    path.write_text("q1 t1 -\n")
    with pytest.raises(InputError, match="line 1: expected two ids .*read by gpualign syntenic only"):
        read_pairs_file(path, ["q1"], ["t1"])
