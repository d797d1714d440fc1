"""The strain simulator: reproducible, and its truth table describes the strain exactly."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpualign_plugin.compare.simulate import (LARGE_EVENTS, SimulationParameters, read_truth,
                                              simulate_genome, write_truth)
from gpualign_plugin.errors import InputError
from gpualign_plugin.scoring import reverse_complement_text

SMALL = dict(inversion_length=300, deletion_length=200, insertion_length=150,
             transposition_length=250)


def random_dna(length: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return "".join(rng.choice(list("ACGT"), size=length))


def undo_rearrangement(reference: str, strain: str, events) -> str:
    """Rebuild the reference from a strain without point events, using only the truth table."""
    large = {event.event: event for event in events}
    pieces = []  # (reference start, text) for every reference interval recovered from the strain
    covered = np.zeros(len(strain) + 1, dtype=bool)
    for name in ("inversion", "transposition"):
        event = large[name]
        text = strain[event.strain_start:event.strain_end]
        pieces.append((event.ref_start, reverse_complement_text(text) if name == "inversion" else text))
        covered[event.strain_start:event.strain_end] = True
    insertion = large["insertion"]
    covered[insertion.strain_start:insertion.strain_end] = True
    # The remaining strain bases are the reference in order, minus the deleted and moved blocks.
    rest = "".join(base for base, used in zip(strain, covered) if not used)
    gaps = sorted([(large["deletion"].ref_start, large["deletion"].ref_end),
                   (large["transposition"].ref_start, large["transposition"].ref_end),
                   (large["inversion"].ref_start, large["inversion"].ref_end)])
    rebuilt, cursor, taken = [], 0, 0
    for start, end in gaps:
        rebuilt.append(rest[taken:taken + start - cursor])
        taken += start - cursor
        if (start, end) == (large["deletion"].ref_start, large["deletion"].ref_end):
            rebuilt.append(reference[start:end])  # the truth says these bases are gone
        else:
            rebuilt.append(dict(pieces)[start])
        cursor = end
    rebuilt.append(rest[taken:])
    return "".join(rebuilt)


@settings(max_examples=25, deadline=None)
@given(length=st.integers(3000, 6000), seed=st.integers(0, 2**32 - 1))
def test_truth_table_rebuilds_the_reference_without_point_events(length, seed):
    reference = random_dna(length, seed)
    params = SimulationParameters(substitution_rate=0.0, indel_rate=0.0, **SMALL)
    (strain,), events = simulate_genome([("chr", reference)], params, seed)
    assert [event.event for event in events if event.event in LARGE_EVENTS]
    assert {event.event for event in events} == set(LARGE_EVENTS)
    assert len(strain[1]) == length - 200 + 150
    assert undo_rearrangement(reference, strain[1], events) == reference


@settings(max_examples=25, deadline=None)
@given(length=st.integers(3000, 6000), seed=st.integers(0, 2**32 - 1))
def test_point_events_match_the_bases_and_the_length(length, seed):
    reference = random_dna(length, seed)
    params = SimulationParameters(substitution_rate=0.02, indel_rate=0.005, **SMALL)
    (strain,), events = simulate_genome([("chr", reference)], params, seed, prefix="s_")
    name, text = strain
    assert name == "s_chr"
    inversion = next(event for event in events if event.event == "inversion")
    expected_length = length - 200 + 150
    for event in events:
        if event.event == "substitution":
            ref_base, alt = event.detail.split(">")
            assert text[event.strain_start] == alt != ref_base
            if event.ref_start >= 0:
                source = reference[event.ref_start]
                inside_inversion = inversion.ref_start <= event.ref_start < inversion.ref_end
                assert (reverse_complement_text(source) if inside_inversion else source) == ref_base
        elif event.event == "small_insertion":
            expected_length += event.length
            assert event.strain_end - event.strain_start == event.length
        elif event.event == "small_deletion":
            expected_length -= event.length
            assert event.strain_start == event.strain_end
    assert len(text) == expected_length


def test_same_seed_same_strain_and_different_seed_differs():
    reference = random_dna(5000, 7)
    params = SimulationParameters(**SMALL)
    first = simulate_genome([("chr", reference)], params, 11)
    again = simulate_genome([("chr", reference)], params, 11)
    other = simulate_genome([("chr", reference)], params, 12)
    assert first == again
    assert first[0] != other[0]


def test_truth_table_round_trips(tmp_path):
    params = SimulationParameters(**SMALL)
    _, events = simulate_genome([("a", random_dna(4000, 1)), ("b", random_dna(3000, 2))], params, 5)
    path = tmp_path / "truth.tsv"
    with open(path, "w") as handle:
        write_truth(handle, events)
    assert read_truth(path) == events
    assert {event.record for event in events} == {"a", "b"}


def test_disabled_events_are_not_planted():
    params = SimulationParameters(inversion_length=0, deletion_length=0, insertion_length=0,
                                  transposition_length=300, substitution_rate=0, indel_rate=0)
    _, events = simulate_genome([("chr", random_dna(3000, 3))], params, 1)
    assert [event.event for event in events] == ["transposition"]


def test_too_short_record_is_refused_naming_it():
    with pytest.raises(InputError, match="record 'tiny'.*too short"):
        simulate_genome([("tiny", random_dna(500, 1))], SimulationParameters(**SMALL), 1)


@pytest.mark.parametrize("field,value", [("substitution_rate", 0.9), ("deletion_length", -1),
                                         ("max_indel", 0)])
def test_bad_parameters_are_refused(field, value):
    with pytest.raises(InputError, match=field.replace("_", "-")):
        SimulationParameters(**{field: value})


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "simulate", *args],
                          capture_output=True, text=True)


def test_cli_writes_fasta_and_truth(tmp_path):
    reference = tmp_path / "ref.fa"
    reference.write_text(">chr1 test\n" + random_dna(6000, 4) + "\n")
    out, truth = tmp_path / "strain.fa", tmp_path / "truth.tsv"
    result = run_cli("--reference", str(reference), "--seed", "9", "--prefix", "S_",
                     "--out", str(out), "--truth", str(truth), *[
                         item for key, value in SMALL.items()
                         for item in ("--" + key.replace("_", "-"), str(value))])
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith(">S_chr1\n")
    assert {event.event for event in read_truth(truth)} >= set(LARGE_EVENTS)


def test_cli_rejects_protein_input_naming_file_record_and_position(tmp_path):
    reference = tmp_path / "prot.fa"
    reference.write_text(">p1\nMKVLAAGIVLLLAQ\n")  # M, K, V are IUPAC codes; L is not
    out = tmp_path / "strain.fa"
    result = run_cli("--reference", str(reference), "--seed", "1", "--out", str(out),
                     "--truth", str(tmp_path / "t.tsv"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "prot.fa: record 'p1': position 4" in result.stderr
    assert not out.exists()
