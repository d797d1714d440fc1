"""``--pairs`` files as editors and sequencers leave them: a byte-order mark, CRLF, comments,
record names holding '#'."""

from __future__ import annotations

from gpualign_plugin.io.pairs import read_pairs_file


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
