"""Local placement on the GPU: the same records as the plain-Python oracle and as the CPU engine."""

from __future__ import annotations

import math
import random

import numpy as np
import oracles
import pytest
from test_placement import PARAMETERS, SCHEME, _records, placement_case
from test_placement_rounds import _repeat_rich
from test_placement_truth import lambda_text, strain_contigs

from gpualign_plugin.pairwise.api import place_local

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("zdrop_bits", [12.0, math.inf])
def test_gpu_local_placement_equals_the_oracle_record_for_record(seed, zdrop_bits):
    queries, targets = placement_case(seed)
    placed = place_local([SCHEME.encode(*q) for q in queries], [SCHEME.encode(*t) for t in targets],
                         SCHEME, backend="gpu", zdrop_bits=zdrop_bits)
    zdrop = zdrop_bits * math.log(2) / PARAMETERS.lam
    assert _records(placed) == oracles.local_placement(queries, targets, SCHEME, PARAMETERS, 1e-5,
                                                       zdrop)


def test_gpu_and_cpu_place_the_contigs_of_a_rearranged_strain_identically():
    reference = lambda_text()[:20000]
    contigs, _ = strain_contigs(reference, seed=3)
    queries = [SCHEME.encode(f"contig{k}", c) for k, c in enumerate(contigs)]
    targets = [SCHEME.encode("ref", reference)]
    gpu = place_local(queries, targets, SCHEME, backend="gpu")
    cpu = place_local(queries, targets, SCHEME, backend="cpu")
    assert gpu == cpu and any(a.is_supplementary for a in gpu)
    assert [(a.evalue, a.bit_score, a.mapq) for a in gpu] == [(a.evalue, a.bit_score, a.mapq) for a in cpu]


@pytest.mark.parametrize("rows", [16, 8, 4, 2])
def test_pair_scorer_gives_each_pair_the_cpu_score_and_end_cell(rows):
    """Many pairs in one launch (and, with a small budget, several launches): every pair's score
    and end cell equal score_pair's; shared segments, heights not a multiple of the strip,
    targets narrower than a batch of 32 columns, repeats with tied cells."""
    from gpualign_plugin.pairwise import cpu, gpu

    rng = random.Random(rows)
    targets = [SCHEME.encode(f"t{k}", _repeat_rich(rng, n)) for k, n in enumerate((3000, 700, 40))]
    segments = [SCHEME.encode("q", _repeat_rich(rng, n)).codes for n in (1, 31, 64, 100, 513, 1500)]
    pairs = []
    for q in segments:
        for t_index, target in enumerate(targets):
            t0 = rng.randrange(len(target))
            pairs.append((q, t_index, t0, rng.randint(t0 + 1, len(target))))
            pairs.append((q, t_index, 0, len(target)))
    expected = [cpu.score_pair(q, targets[t].codes[t0:t1], SCHEME, "local") for q, t, t0, t1 in pairs]
    scorer = gpu.PairScorer([t.codes for t in targets], SCHEME)
    assert scorer.score(pairs, rows=rows) == expected
    small = gpu.PairScorer([t.codes for t in targets], SCHEME, memory_budget=200_000)
    assert small.score(pairs, rows=rows) == expected and small.launches > 1
    assert sum(s.score > 0 for s in expected) > len(pairs) // 2


def test_pair_scorer_prunes_inside_each_pair_and_keeps_every_result():
    """Contigs that copy a stretch of the genome then go on unrelated: each pair prunes against
    its own best score (not another pair's), skips cells, and every score and end cell equals the
    CPU's and the unpruned launch's; unrelated pairs in the same launch keep theirs."""
    from gpualign_plugin.pairwise import cpu, gpu

    rng = random.Random(5)
    genome = SCHEME.encode("g", "".join(rng.choice("ACGT") for _ in range(20_000))).codes
    pairs = []
    for start, copied in ((0, 2_000), (7_000, 3_000), (15_000, 1_200)):
        copy = genome[start:start + copied].copy()
        tail = SCHEME.encode("u", "".join(rng.choice("ACGT") for _ in range(300))).codes
        contig = np.concatenate([copy, tail])
        pairs += [(contig, 0, 0, len(genome)), (contig, 0, start, len(genome))]
    unrelated = SCHEME.encode("u", "".join(rng.choice("ACGT") for _ in range(2_500))).codes
    pairs.append((unrelated, 0, 0, len(genome)))
    expected = [cpu.score_pair(q, genome[t0:t1], SCHEME, "local") for q, _, t0, t1 in pairs]
    pruning = gpu.PairScorer([genome], SCHEME)
    assert pruning.score(pairs) == expected == gpu.PairScorer([genome], SCHEME, prune=False).score(pairs)
    assert pruning.pruned_cells > 0.1 * pruning.swept_cells


@pytest.mark.parametrize("seed", range(2))
def test_gpu_rounds_on_sliced_targets_equal_the_cpu_records(seed, monkeypatch):
    from test_placement_rounds import _case

    from gpualign_plugin.pairwise import placement

    queries, targets = _case(seed)
    monkeypatch.setattr(placement, "SLICE_SPAN_RATIO", 2)
    monkeypatch.setattr(placement, "SLICE_MIN_COLUMNS", 1)
    profile: dict = {}
    gpu = place_local(queries, targets, SCHEME, backend="gpu", gpu_profile=profile)
    cpu = place_local(queries, targets, SCHEME, backend="cpu")
    assert gpu == cpu
    # As many alignments as the rounds driver asks for on the CPU (the asks do not depend on slicing).
    from test_placement_rounds import _CpuPairScorer, _plans

    from gpualign_plugin.pairwise import cpu as cpu_engine

    asked = []
    placement._place_together(
        queries, targets, _plans(queries, targets, SCHEME, PARAMETERS, ("+", "-")), SCHEME,
        _CpuPairScorer(targets), lambda q, t, _score: asked.append(1) or cpu_engine.align_pair(q, t, SCHEME, "local"),
        placement.ZDROP_BITS * math.log(2) / PARAMETERS.lam, None, workers=2)
    assert profile["score_launches"] > 0 and profile["alignments"] == len(asked) > 0
    # One GPU stream: the CPU threads take most of each round's alignments; same records.
    monkeypatch.setattr(placement, "GPU_STREAMS", 1)
    shared: dict = {}
    assert place_local(queries, targets, SCHEME, backend="gpu", gpu_profile=shared) == cpu
    assert shared["alignments"] == profile["alignments"]


def test_gpu_placement_progress_moves_inside_one_query_and_changes_nothing():
    """The GPU engine reports DP cells as they are computed, one query (a LongPairSession: its
    score passes and alignments) and several (each round's multi-pair score call, and every
    alignment's passes), and the records are those placed without progress."""
    queries, targets = placement_case(3)
    encoded_t = [SCHEME.encode(*t) for t in targets]
    encoded_q = [SCHEME.encode(*q) for q in queries]
    for chosen in (encoded_q[:1], encoded_q):
        per_query, inside = [], []
        placed = place_local(chosen, encoded_t, SCHEME, backend="gpu", on_cells=per_query.append,
                             on_progress=inside.append)
        assert placed == place_local(chosen, encoded_t, SCHEME, backend="gpu")
        assert len(per_query) == len(chosen) and len(inside) > 4 and min(inside) > 0
        # The first pass (the whole query against every target on both strands) is always
        # computed; later passes are pruned and alignments may reuse a kept pass, so the cells
        # reported can be fewer than the score-pass cells on_cells counts.
        first_pass = sum(len(q) for q in chosen) * sum(len(t) for t in encoded_t) * 2
        assert sum(inside) >= first_pass and sum(per_query) >= first_pass


def test_placement_and_alignment_split_over_devices_equal_one_device():
    """``devices=``: a strain genome placed on its reference (one query, one target: the
    LongPairSession's score passes and alignments) and aligned end to end, the matrix split in
    two slabs; on one GPU the device is named twice and the slabs run one after the other."""
    from gpualign_plugin.pairwise.api import align_records

    reference = lambda_text()
    contigs, _ = strain_contigs(reference, seed=5)
    strain = SCHEME.encode("strain", "".join(contigs))
    targets = [SCHEME.encode("ref", reference)]
    split: dict = {}
    placed = place_local([strain], targets, SCHEME, backend="gpu", devices=[0, 0], gpu_profile=split)
    assert placed == place_local([strain], targets, SCHEME, backend="gpu") and len(placed) > 2
    assert split["slabs"] == 2 and split["kept_hits"] >= 1
    split = {}
    aligned = align_records([strain], targets, SCHEME, "global", backend="gpu", devices=[0, 0], gpu_profile=split)
    assert aligned == align_records([strain], targets, SCHEME, "global", backend="gpu") and split["slabs"] == 2


def test_a_session_scores_both_strands_at_once_as_it_does_one_after_the_other():
    """``LongPairSession.score_all`` runs the passes of a strain's two strands on the reference
    at once (a stream and a thread each): the end cells of the CPU engine and of one pass after
    the other, and both kept passes give align_pair's alignments."""
    from gpualign_plugin.pairwise import cpu, gpu
    from gpualign_plugin.scoring import reverse_complement_codes

    reference = SCHEME.encode("ref", lambda_text()).codes
    strain = SCHEME.encode("strain", "".join(strain_contigs(lambda_text(), seed=5)[0])).codes
    pairs = [("+", strain, reference), ("-", reverse_complement_codes(strain), reference)]
    profile: dict = {}
    with gpu.long_pair_session(SCHEME, "local", profile=profile) as session:
        together = session.score_all(pairs)
        aligned = [session.align(key, q, t) for key, q, t in pairs]
    assert profile["score_passes"] == 2 and profile["kept_hits"] == 2
    with gpu.long_pair_session(SCHEME, "local") as session:
        assert [session.score(*pair) for pair in pairs] == together
    assert together == [cpu.score_pair(q, t, SCHEME, "local") for _, q, t in pairs]
    assert aligned == [gpu.align_pair(q, t, SCHEME, "local") for _, q, t in pairs]
    assert together[0].score > together[1].score > 0


def test_one_query_skips_the_second_best_pass_on_a_strand_with_nothing_significant():
    """A lambda segment placed on lambda, both strands, one query (the LongPairSession path): the
    minus strand's whole-query pass scores below the floor, so the piece's second-best pass there
    (and any segment pass on it) is answered without a pass; the records equal the CPU engine's."""
    reference = lambda_text()[:12000]
    query = SCHEME.encode("segment", reference[3000:9000])
    target = SCHEME.encode("ref", reference)
    cells: list = []
    placed = place_local([query], [target], SCHEME, backend="gpu", on_cells=cells.append)
    assert placed == place_local([query], [target], SCHEME, backend="cpu")
    # Both strands' whole passes and the piece's second-best pass on its own strand (the target
    # outside the piece's columns); the second-best pass on the minus strand is not run.
    assert len(placed) == 1 and placed[0].strand == "+"
    assert sum(cells) == 2 * len(query) * len(target) + len(query) * (len(target) - len(query))


def test_one_strain_genome_with_inversions_is_placed_as_the_cpu_places_it():
    """One query (the LongPairSession path: strands scored at once, re-scores pruned) whose
    pieces lie on both strands: the records of the CPU engine."""
    reference = lambda_text()
    strain = SCHEME.encode("strain", "".join(strain_contigs(reference, seed=5)[0]))
    targets = [SCHEME.encode("ref", reference)]
    placed = place_local([strain], targets, SCHEME, backend="gpu")
    assert placed == place_local([strain], targets, SCHEME, backend="cpu")
    assert {a.strand for a in placed} == {"+", "-"}


def test_gpu_and_cpu_leave_out_the_same_low_complexity_pieces():
    # A poly-A contig and a contig whose poly-A tail outruns the reference's: pieces on the
    # reference's poly-A only are significant by score and left out by both engines alike.
    rng = random.Random(5)
    genome = "".join(rng.choice("ACGT") for _ in range(8000)) + "A" * 40
    queries = [SCHEME.encode("polyA", "A" * 300), SCHEME.encode("tail", genome[5000:] + "A" * 160)]
    targets = [SCHEME.encode("ref", genome)]
    for count in (False, True):
        gpu = place_local(queries, targets, SCHEME, backend="gpu", count_low_complexity=count)
        cpu = place_local(queries, targets, SCHEME, backend="cpu", count_low_complexity=count)
        assert gpu == cpu
        assert (len(cpu) == 1) != count
