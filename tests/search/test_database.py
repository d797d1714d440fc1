"""Prepared search databases: the bulk FASTA reader equals the record reader (records and errors),
makedb round trip, byte-identical searches from FASTA and .gadb, refused damaged databases."""

from __future__ import annotations

import gzip
import json
import os
import shutil

import numpy as np
import pytest

from gpualign_plugin.cli.main import main
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.scoring import DNA, PROTEIN, ScoringScheme
from gpualign_plugin.search.database import (load_database, open_database, read_database,
                                             write_database)
from paths import DATA

PROTEIN_SCHEME = ScoringScheme.from_matrix("BLOSUM62")

BLOSUM62 = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
QUERIES = os.path.join(DATA, "search_queries.fa")
DB = os.path.join(DATA, "search_db.fa")


def run_cli(*args) -> int:
    return main([str(a) for a in args])


def assert_same_records(database, records):
    assert len(database) == len(records)
    assert database.names == [r.id for r in records]
    assert [database.description(k) for k in range(len(database))] == [r.description for r in records]
    for index, record in enumerate(records):
        mine = database.record(index)
        assert mine.text == record.text
        assert np.array_equal(mine.codes, record.codes)
        assert np.array_equal(database.target_codes(index), record.codes)
    assert database.residues == sum(len(r) for r in records)
    lengths = [len(r) for r in records]
    assert database.order.tolist() == sorted(range(len(records)), key=lambda i: (lengths[i], i))


@pytest.mark.parametrize("name,text,alphabet", [
    ("fixture", None, PROTEIN),
    ("messy", ">first  a description\twith a tab  \r\nMKV LA\r\n\r\n  mkvl\t\n>second\n\nWWWW*\n\n", PROTEIN),
    ("comment_first", ";a comment\n>x\nMKVL\n", PROTEIN),
    ("dna_with_u", ">r1 one\nACGUNacgtRY\n>r2\nA\nC\n", DNA),
    ("gzip", None, PROTEIN),
])
def test_bulk_reader_equals_the_record_reader(tmp_path, name, text, alphabet):
    scheme = BLOSUM62 if alphabet is PROTEIN else ScoringScheme.dna()
    if name == "fixture":
        path = DB
    elif name == "gzip":
        path = tmp_path / "db.fa.gz"
        path.write_bytes(gzip.compress(open(DB, "rb").read()))
    else:
        path = tmp_path / "db.fa"
        path.write_bytes(text.encode("latin-1"))
    assert_same_records(read_database(path, alphabet), read_fasta(path, scheme))


@pytest.mark.parametrize("text", [
    "", "\n \n", "MKV\n", ">a\nMKV\n>b\n\n>c\nMK\n", ">a\nMKV\n>a\nMK\n", "> \nMKV\n", ">a\nMK1V\n",
    ">a\nACGTACGTAC\n>b\nACGTACGTACGTAC\n", ">a\nMKV\n >b\nMKV\n", ">a\nMKV\n>b",
], ids=["empty", "blank", "no_header", "empty_record", "duplicate", "no_name", "bad_residue",
        "nucleotides", "indented_header", "header_only_at_end"])
def test_bulk_reader_errors_are_the_record_readers(tmp_path, text):
    path = tmp_path / "db.fa"
    path.write_text(text)
    with pytest.raises(InputError) as expected:
        read_fasta(path, BLOSUM62)
    with pytest.raises(InputError) as got:
        read_database(path, PROTEIN)
    assert str(got.value) == str(expected.value)


def test_write_and_open_round_trip(tmp_path):
    database = read_database(DB, PROTEIN)
    write_database(database, tmp_path / "db.gadb")
    write_database(database, tmp_path / "db.gadb")  # replaces a prepared database
    opened = open_database(tmp_path / "db.gadb")
    assert_same_records(opened, read_fasta(DB, BLOSUM62))
    assert isinstance(opened.codes, np.memmap)
    assert sorted(os.listdir(tmp_path)) == ["db.gadb"]  # no temporary left behind
    (tmp_path / "plain").write_text("x")
    with pytest.raises(InputError, match="not a prepared database"):
        write_database(database, tmp_path / "plain")


def test_cli_search_of_prepared_and_fasta_is_byte_identical(tmp_path):
    assert run_cli("makedb", "--db", DB, "--out", tmp_path / "db.gadb") == 0
    outputs = {}
    for kind, db in (("fasta", DB), ("gadb", tmp_path / "db.gadb")):
        names = [tmp_path / f"{kind}.{ext}" for ext in ("m8", "tsv", "sam")]
        assert run_cli("search", "-q", QUERIES, "-d", db, "--top", 5, "--chunk-residues", 2000,
                       "--out-blast", names[0], "--out-tsv", names[1], "--out-sam", names[2]) == 0
        outputs[kind] = [[line for line in n.read_text().splitlines() if not line.startswith("@PG")]
                         for n in names]
    assert outputs["fasta"] == outputs["gadb"]
    assert len(outputs["fasta"][0]) > 10
    for shard in range(2):
        assert run_cli("search", "-q", QUERIES, "-d", tmp_path / "db.gadb", "--top", 5, "--shards", 2,
                       "--shard", shard, "--out-hits", tmp_path / f"p{shard}.hits") == 0
    assert run_cli("merge-hits", tmp_path / "p0.hits", tmp_path / "p1.hits", "--out-blast",
                   tmp_path / "merged.m8") == 0
    assert (tmp_path / "merged.m8").read_text().splitlines() == outputs["fasta"][0]


def _damage(path, case):
    if case == "corrupted":
        codes = path / "codes.npy"
        data = bytearray(codes.read_bytes())
        data[-1] ^= 0x01
        codes.write_bytes(bytes(data))
        return "CRC-32"
    if case == "descriptions":  # a line break more or less: as many descriptions as records no more
        descriptions = path / "descriptions.npy"
        data = bytearray(descriptions.read_bytes())
        data[-2] = ord("x") if data[-2] == ord("\n") else ord("\n")
        descriptions.write_bytes(bytes(data))
        return "descriptions.npy is corrupted"
    if case == "truncated":
        text = path / "text.npy"
        text.write_bytes(text.read_bytes()[:-10])
        return "truncated"
    header = json.loads((path / "header.json").read_text())
    if case == "wrong_version":
        header["version"] = 99
        (path / "header.json").write_text(json.dumps(header))
        return "version 99"
    if case == "no_header":
        (path / "header.json").write_text("{")
        return "header.json"
    (path.parent / "dna.fa").write_text(">d1\nACGTTGCA\n")
    shutil.rmtree(path)
    assert run_cli("makedb", "--db", path.parent / "dna.fa", "--alphabet", "dna", "--out", path) == 0
    return "is a dna database but the scoring scheme is for protein"


@pytest.mark.parametrize("case", ["corrupted", "descriptions", "truncated", "wrong_version", "no_header",
                                  "alphabet"])
def test_damaged_prepared_database_is_one_line_exit_2(tmp_path, capsys, case):
    db = tmp_path / "db.gadb"
    assert run_cli("makedb", "--db", DB, "--out", db) == 0
    expected = _damage(db, case)
    capsys.readouterr()
    out = tmp_path / "o.m8"
    assert run_cli("search", "-q", QUERIES, "-d", db, "--out-blast", out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and expected in err and "\n" not in err
    assert str(db) in err and not out.exists()


def test_background_check_reports_damage_on_confirm(tmp_path):
    write_database(read_database(DB, PROTEIN), tmp_path / "x.gadb")
    _damage(tmp_path / "x.gadb", "corrupted")
    database = open_database(tmp_path / "x.gadb", verify="background")
    with pytest.raises(InputError, match="CRC-32"):
        database.confirm()
    database.confirm()  # reported once
    codes = tmp_path / "x.gadb" / "codes.npy"
    data = bytearray(codes.read_bytes())
    data[-1] = 200  # a code outside the alphabet is refused at once, checksum or not
    codes.write_bytes(bytes(data))
    with pytest.raises(InputError, match="outside the alphabet"):
        open_database(tmp_path / "x.gadb", verify=False)


def test_load_database_tells_fasta_from_prepared(tmp_path):
    write_database(read_database(DB, PROTEIN), tmp_path / "x.gadb")
    assert load_database(tmp_path / "x.gadb", BLOSUM62).names == load_database(DB, BLOSUM62).names


def test_makedb_makes_a_missing_directory_and_refuses_one_under_a_file(tmp_path, capsys):
    assert run_cli("makedb", "--db", DB, "--out", tmp_path / "new" / "deeper" / "db.gadb") == 0
    assert load_database(tmp_path / "new" / "deeper" / "db.gadb", BLOSUM62).names == \
        load_database(DB, BLOSUM62).names
    capsys.readouterr()
    (tmp_path / "file").write_text("x")
    assert run_cli("makedb", "--db", DB, "--out", tmp_path / "file" / "db.gadb") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and "\n" not in err
    assert "cannot create the output directory" in err and "file/db.gadb" in err


def test_makedb_alphabet_follows_the_records(tmp_path):
    (tmp_path / "dna.fa").write_text(">d1\nACGTTGCAACGT\n>d2\nTTGACCA\n")
    assert run_cli("makedb", "--db", tmp_path / "dna.fa", "--out", tmp_path / "dna.gadb") == 0
    assert run_cli("makedb", "--db", DB, "--out", tmp_path / "protein.gadb") == 0
    assert open_database(tmp_path / "dna.gadb").alphabet == DNA.name
    assert open_database(tmp_path / "protein.gadb").alphabet == PROTEIN.name


def test_a_protein_file_is_refused_as_nucleotides_by_both_readers_alike(tmp_path):
    # Files around the 90% / 10-letter thresholds, with stops ('*', not a letter) and lower case:
    # the bulk reader and the record reader refuse exactly the files whose residues, all records
    # together, looks_like_nucleotide flags.
    from gpualign_plugin.io.fasta import read_fasta_arrays
    from gpualign_plugin.scoring import looks_like_nucleotide

    rng = np.random.default_rng(11)
    pool = np.array(list("ACGTNacgtnMKVLWY*"))
    weights = np.r_[[0.09] * 10, [0.01] * 6, [0.04]]
    files = [["ACGTACGTA"], ["ACGTACGTAC"], ["ACGTACGTA*C"], ["ACGTACGTAM"], ["ACGTACGTAMM"], ["*" * 12, "MK"]]
    files += [["".join(rng.choice(pool, int(rng.integers(1, 40)), p=weights))
               for _ in range(int(rng.integers(1, 4)))] for _ in range(200)]
    refused = 0
    for k, records in enumerate(files):
        path = tmp_path / f"f{k}.fa"
        path.write_text("".join(f">r{j}\n{text}\n" for j, text in enumerate(records)))
        expected = looks_like_nucleotide("".join(records))
        outcomes = []
        for read in (lambda: read_fasta_arrays(path, PROTEIN), lambda: read_fasta(path, PROTEIN_SCHEME)):
            try:
                read()
                outcomes.append(None)
            except InputError as err:
                outcomes.append(str(err))
        assert outcomes[0] == outcomes[1] and (outcomes[0] is not None) == expected, (records, outcomes)
        refused += expected
    assert 20 < refused < len(files) - 20  # both kinds, many of each
