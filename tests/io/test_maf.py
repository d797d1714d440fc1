"""MAF writing and reading: round trip, the minus-strand start rule, an independent parser, errors."""

from __future__ import annotations

import io

import pytest

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.maf import read_maf, write_maf
from gpualign_plugin.model import MultipleAlignment


def block(score=10, strand2="-"):
    # Row 2: the forward-strand interval [5, 12) of a 20-base source, on the minus strand.
    return MultipleAlignment(
        ids=("a", "b", "c"), sources=("hs.chr1", "mm.chr7", "c"),
        rows=("ACG-TTAc", "AC--TTAG", "ACGATTA-"), score=score,
        starts=(100, 0, 5), ends=(107, 6, 12), strands=("+", "+", strand2),
        source_lengths=(1000, 6, 20))


def test_round_trip_keeps_every_field(tmp_path):
    path = tmp_path / "x.maf"
    blocks = [block(10), block(-3, "+")]
    write_maf(str(path), blocks, comments=["made by a test"])
    text = path.read_text()
    assert text.startswith("##maf version=1 scoring=sum-of-pairs\n# made by a test\n")
    back = read_maf(path)
    assert [(b.sources, b.rows, b.score, b.starts, b.ends, b.strands, b.source_lengths)
            for b in back] == \
           [(b.sources, b.rows, b.score, b.starts, b.ends, b.strands, b.source_lengths)
            for b in blocks]


def test_minus_strand_start_counts_on_the_reverse_complement(tmp_path):
    path = tmp_path / "x.maf"
    write_maf(str(path), [block()])
    s_lines = [line.split() for line in path.read_text().splitlines() if line.startswith("s ")]
    # forward [5, 12) of 20 bases on '-': start = 20 - 12 = 8, size 7
    assert s_lines[2][1:6] == ["c", "8", "7", "-", "20"]
    assert s_lines[0][1:6] == ["hs.chr1", "100", "7", "+", "1000"]


def test_biopython_reads_the_same_coordinates(tmp_path):
    from Bio import AlignIO

    path = tmp_path / "x.maf"
    write_maf(str(path), [block()])
    alignment = AlignIO.read(str(path), "maf")
    got = [(r.id, r.annotations["start"], r.annotations["size"], r.annotations["strand"],
            r.annotations["srcSize"], str(r.seq)) for r in alignment]
    assert got == [("hs.chr1", 100, 7, 1, 1000, "ACG-TTAc"), ("mm.chr7", 0, 6, 1, 6, "AC--TTAG"),
                   ("c", 8, 7, -1, 20, "ACGATTA-")]


def test_writing_to_a_handle_appends_blocks():
    handle = io.StringIO()
    write_maf(handle, [block(1), block(2), block(3)])
    assert handle.getvalue().count("\na score=") == 3


@pytest.mark.parametrize("text,message", [
    ("track name=x\n", "not a MAF file"),
    ("##maf version=1\na score=1\ns a 0 3 + 10\n", "7 fields"),
    ("##maf version=1\na score=1\ns a 0 4 + 10 AC-G\n", "does not match"),
    ("##maf version=1\na score=1\ns a 8 3 + 10 ACG\n", "outside"),
    ("##maf version=1\na score=1\ns a 0 3 + 10 ACG\ns b 0 2 + 10 AC\n", "different lengths"),
    ("##maf version=1\ns a 0 3 + 10 ACG\n", "outside an alignment block"),
])
def test_malformed_maf_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.maf"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        read_maf(path)
    assert "bad.maf" in str(info.value)


def test_foreign_blocks_with_float_scores_and_other_lines(tmp_path):
    path = tmp_path / "ucsc.maf"
    path.write_text("##maf version=1 scoring=tba.v8\n# tba.v8 (((human chimp) baboon) (mouse rat))\n\n"
                    "a score=23262.0\ns hg16.chr7 27578828 38 + 158545518 AAA-GGGAATGTTAACCAAATGA"
                    "---ATTGTCTCTTACGGTG\n"
                    "i hg16.chr7 N 0 C 0\n"
                    "s panTro1.chr6 28741140 38 + 161576975 AAA-GGGAATGTTAACCAAATGA"
                    "---ATTGTCTCTTACGGTG\n\n"
                    "a score=0.5\ns x 10 3 - 20 A-CG\n")
    first, second = read_maf(path)
    assert first.score == 23262 and first.starts == (27578828, 28741140)
    assert second.score == 0.5 and (second.starts, second.ends) == ((7,), (10,))
