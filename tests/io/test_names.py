"""Names (record names kept as one byte array) and the bulk FASTA reader's use of them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpualign_plugin.errors import InputError
from gpualign_plugin.io import fasta
from gpualign_plugin.io.fasta import read_fasta, read_fasta_arrays
from gpualign_plugin.io.names import Names
from gpualign_plugin.scoring import DNA, ScoringScheme

NAMES = ["r1", "chr2", "é", "x" * 300, "r1"]


def test_names_read_as_the_list_they_were_made_of():
    names = Names.of(NAMES)
    assert len(names) == 5 and list(names) == NAMES and names == NAMES and names != NAMES[:-1]
    assert [names[k] for k in range(5)] == NAMES and names[1:3] == NAMES[1:3] and names[-1] == "r1"
    assert names.lengths().tolist() == [len(n.encode("utf-8")) for n in NAMES]
    assert bytes(names.first_bytes()) == b"rc\xc3xr"
    assert Names.of(names) is names and Names.of(NAMES) == names
    for k, name in enumerate(NAMES):  # name k is data[offsets[k]:offsets[k + 1] - 1], then a newline
        assert bytes(names.data[names.offsets[k]:names.offsets[k + 1]]) == (name + "\n").encode("utf-8")
    assert len(Names.of([])) == 0 and list(Names.of([])) == [] and Names.of([]).lengths().size == 0


def test_only_bytes_outside_a_class_tries_every_byte_of_every_name():
    digits = re.compile(r"[0-9]")
    assert Names.of(["ab", "cd"]).only_bytes_outside(digits)
    assert not Names.of(["ab", "c9"]).only_bytes_outside(digits)
    assert not Names.of(["ab", "é"]).only_bytes_outside(re.compile(r"[^a-z]"))  # UTF-8 bytes >= 128
    assert Names.of(["ab", "cd"]).only_bytes_outside(re.compile(r"[^a-z\n]"))


def test_the_bulk_reader_keeps_plain_names_as_bytes_and_others_as_strings(tmp_path):
    plain = tmp_path / "plain.fa"
    plain.write_text("".join(f">read_{k}\nACGT\n" for k in range(50)))
    records = read_fasta_arrays(plain, DNA)
    assert isinstance(records.names, Names) and records.names == [f"read_{k}" for k in range(50)]
    assert records.record(7).id == "read_7" and records.description(7) == ""
    described = tmp_path / "described.fa"
    described.write_text(">a first\nACGT\n>b second one\nAC\n")
    records = read_fasta_arrays(described, DNA)
    assert records.names == ["a", "b"] and [records.description(k) for k in (0, 1)] == ["first", "second one"]
    assert [r.id for r in read_fasta(described, ScoringScheme.dna())] == ["a", "b"]


def test_a_repeated_name_is_refused_whichever_way_the_hashes_fall(tmp_path):
    path = tmp_path / "twice.fa"
    path.write_text(">a\nACGT\n>b\nACGT\n>a\nAC\n")
    with pytest.raises(InputError) as bulk:
        read_fasta_arrays(path, DNA)
    with pytest.raises(InputError) as records:
        read_fasta(path, ScoringScheme.dna())
    assert str(bulk.value) == str(records.value)
    # Equal hashes of different names (a collision) only send the check to the names themselves.
    names = Names.of(["a", "b", "c"])
    assert not fasta._has_repeats(names, np.array([5, 5, 7], dtype=np.uint64))
    assert fasta._has_repeats(Names.of(["a", "b", "a"]), np.array([5, 6, 5], dtype=np.uint64))
    assert not fasta._has_repeats(names, np.array([1, 2, 3], dtype=np.uint64))
