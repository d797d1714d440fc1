"""FASTA reading: plain and gzip, many records, case kept, and one-line errors for bad files."""

import gzip

import pytest

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.fasta import iter_fasta_text, read_fasta, read_fasta_arrays, write_fasta
from gpualign_plugin.scoring import ScoringScheme

DNA = ScoringScheme.dna()


def write(path, text, compress=False):
    """``text`` as UTF-8 (a lone surrogate escape such as \\udce9 as its byte, here E9)."""
    if compress:
        with gzip.open(path, "wt", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return str(path)


@pytest.mark.parametrize("compress", [False, True])
def test_many_records_plain_and_gzip_with_case_kept(tmp_path, compress):
    path = write(tmp_path / "g.fa", ">chr1 first one\nACGTacgt\nNNAC\n\n>chr2\r\nggcc\r\n", compress)
    records = read_fasta(path, DNA)
    assert [r.id for r in records] == ["chr1", "chr2"]
    assert records[0].text == "ACGTacgtNNAC" and records[0].description == "first one"
    assert records[1].text == "ggcc" and len(records[1]) == 4


def test_write_then_read_round_trips(tmp_path):
    path = tmp_path / "out.fa"
    with open(path, "w") as handle:
        write_fasta(handle, [("a", "ACGT" * 40), ("b", "gg")], width=60)
    assert [(n, t) for n, _, t in iter_fasta_text(path)] == [("a", "ACGT" * 40), ("b", "gg")]
    assert max(len(line) for line in path.read_text().splitlines()) == 60


@pytest.mark.parametrize("content, message", [
    ("", "file is empty"),
    ("\n\n", "file is empty"),
    ("ACGT\n>r\nAC\n", "line 1: not a FASTA file"),
    (">r1\nACGT\n>r2\n", "record 'r2': line 3: record has an empty sequence"),
    (">r1\n\n>r2\nAC\n", "record 'r1': line 1: record has an empty sequence"),
    (">r1\nACGT\n>r1\nAC\n", "record 'r1': line 3: duplicate record name"),
    (">\nACGT\n", "line 1: record header has no name"),
    (">r1\nACGZT\n", "record 'r1': position 4: character 'Z'"),
    (">r1\nACG\u00e9T\n", "record 'r1': position 4: byte 0xc3"),  # UTF-8 'é', read a byte at a time
    (">r1\nAC\x00GT\n", "record 'r1': position 3: byte 0x00"),
])
def test_bad_files_give_one_line_naming_file_record_and_position(tmp_path, content, message):
    path = write(tmp_path / "bad.fa", content)
    with pytest.raises(InputError) as err:
        read_fasta(path, DNA)
    text = str(err.value)
    assert text.startswith(path) and message in text and "\n" not in text


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_bad_character_is_also_named_by_its_line_and_column_in_the_file(tmp_path, compressed):
    """Residue 11 of record 'b' is the '!' on the file's line 7, column 4: the record's lines
    before it hold 8 residues (an empty line and a blank among them), and the tab that starts
    its own line is no residue."""
    content = ">a\nACGT\n>b some description\nACGT\n\nAC GT\n\tAC!GT\n>c\nA\n"
    path = str(tmp_path / ("bad.fa.gz" if compressed else "bad.fa"))
    with (gzip.open(path, "wt") if compressed else open(path, "w")) as handle:
        handle.write(content)
    for reader in (lambda p: read_fasta(p, DNA), lambda p: read_fasta_arrays(p, DNA.alphabet)):
        with pytest.raises(InputError) as err:
            reader(path)
        assert str(err.value) == (f"{path}: record 'b': position 11: character '!' is not in the dna alphabet "
                                  "(line 7, column 4 of the file)")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_fasta(str(tmp_path / "nope.fa"), DNA)


def test_comment_lines_before_the_first_record_are_skipped(tmp_path):
    path = write(tmp_path / "c.fa", ";comment\n>r\nAC\n")
    assert read_fasta(path, DNA)[0].text == "AC"


@pytest.mark.parametrize("piece_bytes", [1, 9, 1 << 22])
def test_bulk_reader_gives_the_record_readers_records_or_its_error_on_random_files(tmp_path, monkeypatch,
                                                                                   piece_bytes):
    """read_fasta_arrays against read_fasta on messy random files: same records, or the same error;
    the files cut into pieces of about ``piece_bytes`` for the parallel scan (one record a piece
    up to one piece in all)."""
    import numpy as np

    from gpualign_plugin.io import fasta
    from gpualign_plugin.io.fasta import read_fasta_arrays

    monkeypatch.setattr(fasta, "SCAN_CHUNK_BYTES", piece_bytes)

    rng = np.random.default_rng(9)
    pieces = [">r1", ">r2 a description", "> r3\tx ", ">", ">r1", "ACGT", "acgtn", "AC GT\t",
              "ACJT", "", "  ", ";c", "RYKM", ">r4>x", "u",
              ">prot_\u03b2 \u00e9t\u00e9", ">em\u2003space", ">lat\udce9n"]  # UTF-8; a lone latin-1 byte
    protein = ScoringScheme.from_matrix("BLOSUM62")
    outcomes = set()
    for case in range(300):
        lines = list(rng.choice(pieces, int(rng.integers(1, 9))))
        if case % 2:
            lines.insert(0, f">first{case}")
        text = ("\r\n" if case % 7 == 0 else "\n").join(lines) + ("" if case % 5 == 0 else "\n")
        path = write(tmp_path / f"f{case}.fa", text, compress=case % 11 == 0)
        for scheme in (DNA, protein):
            try:
                expected = read_fasta(path, scheme)
            except InputError as error:
                with pytest.raises(InputError) as bulk:
                    read_fasta_arrays(path, scheme.alphabet)
                assert str(bulk.value) == str(error), text
                outcomes.add("error")
                continue
            arrays = read_fasta_arrays(path, scheme.alphabet)
            got = [arrays.record(k) for k in range(len(arrays))]
            assert got == expected, text  # ids, text as read, descriptions
            assert [r.codes.tolist() for r in got] == [r.codes.tolist() for r in expected]
            outcomes.add("records")
    assert outcomes == {"error", "records"}


@pytest.mark.parametrize("content", ["  >r1\nACGT\n", "\n \t>r1\nACGT\n", "\ufeff>r1\nACGT\n"])
def test_bulk_reader_refuses_a_first_header_after_spaces_as_the_record_reader_does(tmp_path, content):
    """A first line such as '  >r1' is no header for the record reader (query files); the bulk
    reader (search databases, makedb, batch) gave a record 'r1' for it."""
    from gpualign_plugin.io.fasta import read_fasta_arrays

    path = write(tmp_path / "lead.fa", content)
    with pytest.raises(InputError) as expected:
        read_fasta(path, DNA)
    with pytest.raises(InputError) as bulk:
        read_fasta_arrays(path, DNA.alphabet)
    assert str(bulk.value) == str(expected.value)


def test_a_stray_letter_in_dna_is_not_called_protein(tmp_path):
    # RepeatMasker -x masks with X: the record is DNA with a letter outside the alphabet,
    # and the error must not say the sequence looks like protein.
    path = tmp_path / "masked.fa"
    path.write_text(">chr1\n" + "ACGT" * 50 + "XXXX" + "ACGT" * 50 + "\n>p\nMKVLAEWRRSTYHH\n")
    scheme = ScoringScheme.dna()
    with pytest.raises(InputError) as error:
        read_fasta(path, scheme)
    assert "position 201" in str(error.value) and "protein" not in str(error.value)
    path.write_text(">p\nMKVLAEWRRSTYHHQQIPLLKDE\n")
    with pytest.raises(InputError, match="looks like protein"):
        read_fasta(path, scheme)


def test_utf8_names_are_read_and_written_as_they_are(tmp_path):
    # A UTF-8 header (prot_β) keeps its bytes in every output; a header that is not UTF-8 (a
    # latin-1 é, byte E9) is read as latin-1.
    import subprocess
    import sys

    path = write(tmp_path / "q.fa", ">prot_\u03b2 \u00e9t\u00e9\nMKVLAAGIVGLLLAWKKWHE\n>lat\udce9n\nMKVLAAGIVGLLLAWKKWHF\n")
    protein = ScoringScheme.from_matrix("BLOSUM62")
    assert [(r.id, r.description) for r in read_fasta(path, protein)] == [("prot_\u03b2", "\u00e9t\u00e9"),
                                                                          ("lat\u00e9n", "")]
    subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "search", "-q", path, "-d", path,
                    "--backend", "cpu", "--out-blast", str(tmp_path / "o.m8")], check=True, capture_output=True)
    first = (tmp_path / "o.m8").read_bytes().split(b"\n")[0].split(b"\t")
    assert first[:2] == ["prot_\u03b2".encode(), "prot_\u03b2".encode()]
