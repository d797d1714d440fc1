"""Local placement's driver (of both engines) and its two shortcuts, checked on the CPU.

The engines score many pairs at once, slicing long targets (exact at and above the
significance floor) and aligning each best candidate in a bounded target window. Here the
driver runs with CPU scores and alignments and slices cut as finely as allowed, so everything
but the CUDA kernel is checked against the CPU engine's placement with its own slices (itself
checked against the oracle), and the CPU engine on several threads against one thread.
"""

from __future__ import annotations

import math
import random
import threading

import numba
import numpy as np
import oracles
import pytest
from test_placement import PARAMETERS, SCHEME, _mutate, _random_dna, _rc, _records

from gpualign_plugin.pairwise import cpu, placement
from gpualign_plugin.pairwise.placement import place_local, window_start
from gpualign_plugin.scoring import ScoringScheme


def _repeat_rich(rng, n, alphabet="ACGT"):
    """A sequence built from a few short words and their copies: many equal scores and ties."""
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(3, 9))) for _ in range(4)]
    out = []
    while sum(map(len, out)) < n:
        out.append(rng.choice(words) if rng.random() < 0.7 else rng.choice(alphabet))
    return "".join(out)[:n]


@pytest.mark.parametrize("seed", range(60))
def test_alignment_in_the_window_equals_the_whole_target_alignment(seed):
    """The local alignment ending at the score pass's end cell, aligned only in the window of
    window_start, is the whole target's alignment (score, coordinates, CIGAR), ties included."""
    rng = random.Random(seed)
    scheme = [ScoringScheme.dna(), ScoringScheme.dna(match=1, mismatch=-1, gap_open=0, gap_extend=1),
              ScoringScheme.dna(match=5, mismatch=-4, gap_open=10, gap_extend=1)][seed % 3]
    target = _repeat_rich(rng, rng.randint(50, 400))
    start = rng.randrange(len(target) - 20)
    query = _mutate(rng, target[start:start + rng.randint(20, 120)], 0.15)
    if seed % 2:
        query = _repeat_rich(rng, 8) + query + _repeat_rich(rng, rng.randint(0, 30))
    q, t = scheme.encode("q", query).codes, scheme.encode("t", target).codes
    end = cpu.score_pair(q, t, scheme, "local")
    whole = cpu.align_pair(q, t, scheme, "local")
    assert end.score > 0
    j0 = window_start(end, scheme)
    inside = cpu.align_pair(q[:end.query_end], t[j0:end.target_end], scheme, "local")
    assert (inside.score, inside.query_start, inside.query_end, inside.target_start + j0,
            inside.target_end + j0, str(inside.cigar)) == \
        (whole.score, whole.query_start, whole.query_end, whole.target_start, whole.target_end,
         str(whole.cigar))


class _CpuPairScorer:
    """The interface of gpu.PairScorer (score many pairs, resident warps) on the CPU engine."""

    warps = 1

    def __init__(self, targets):
        self.targets = targets
        self.pairs = 0
        self.cells = 0

    def score(self, pairs):
        self.pairs += len(pairs)
        self.cells += sum(len(q) * (t1 - t0) for q, _, t0, t1 in pairs)
        return [cpu.score_pair(q, self.targets[t].codes[t0:t1], SCHEME, "local") for q, t, t0, t1 in pairs]


def _case(seed):
    """Targets long enough to be sliced (two with a shared repeat), queries of several pieces on
    both strands, a bridged pair of pieces, a repeat copy and an unrelated query."""
    rng = random.Random(seed)
    t1 = _random_dna(rng, 2500)
    repeat = t1[700:900]
    t2 = _random_dna(rng, 900) + repeat + _random_dna(rng, 700)
    queries = []
    for k in range(4):
        parts = []
        for _ in range(rng.randint(1, 3)):
            source = rng.choice([t1, t2])
            start = rng.randrange(0, len(source) - 150)
            piece = _mutate(rng, source[start:start + rng.randint(40, 150)], 0.04)
            parts.append(_rc(piece) if rng.random() < 0.5 else piece)
            if rng.random() < 0.5:
                parts.append(_random_dna(rng, rng.randint(5, 30)))
        queries.append((f"q{k}", "".join(parts)))
    start = rng.randrange(0, 2000)
    queries.append(("bridge", t1[start:start + 60] + _random_dna(rng, 30) + t1[start + 60:start + 120]))
    queries.append(("unrelated", _random_dna(rng, 150)))
    queries.append(("repeat", _mutate(rng, repeat, 0.02)))
    queries.append(("tiny", t1[10:16]))
    return [SCHEME.encode(*q) for q in queries], [SCHEME.encode("chrA", t1), SCHEME.encode("chrB", t2)]


def _plans(queries, targets, scheme, parameters, strands):
    """Per query, its significance floor and placement generator, as place_local makes them."""
    return [placement._plan(query, targets, scheme, strands, parameters, 1e-5, 1) for query in queries]


def _rounds(queries, targets, zdrop_bits, prune, scorer=None, **options):
    """The placement driver on the CPU (DNA scheme, both strands): records and the scorer."""
    scorer = scorer or _CpuPairScorer(targets)
    placed = placement._place_together(
        queries, targets, _plans(queries, targets, SCHEME, PARAMETERS, ("+", "-")), SCHEME, scorer,
        lambda q, t, _score: cpu.align_pair(q, t, SCHEME, "local"), zdrop_bits * math.log(2) / PARAMETERS.lam,
        None, workers=2, prune=prune, **options)
    return placed, scorer


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("zdrop_bits", [12.0, math.inf])
def test_rounds_with_sliced_scores_and_windowed_alignments_give_the_cpu_records(seed, zdrop_bits,
                                                                                monkeypatch):
    queries, targets = _case(seed)
    expected = place_local(queries, targets, SCHEME, backend="cpu", zdrop_bits=zdrop_bits)
    # Slices only twice the span bound: many overlapping slices per target.
    monkeypatch.setattr(placement, "SLICE_SPAN_RATIO", 2)
    monkeypatch.setattr(placement, "SLICE_MIN_COLUMNS", 1)
    scorer = _CpuPairScorer(targets)
    cells, reports = [], []
    # The GPU engine's progress: each score call's cells, through the wrapper place_local uses.
    counted = placement._CountedScorer(scorer, reports.append)
    placed = placement._place_together(
        queries, targets, _plans(queries, targets, SCHEME, PARAMETERS, ("+", "-")), SCHEME, counted,
        lambda q, t, _score: cpu.align_pair(q, t, SCHEME, "local"), zdrop_bits * math.log(2) / PARAMETERS.lam,
        cells.append, workers=2)
    assert placed == expected and any(a.is_supplementary for a in placed)
    assert len(cells) == len(queries)
    assert len(reports) > 1 and min(reports) > 0 and sum(reports) == scorer.cells
    # Without pruning every pass is sliced afresh: the same records, more cells.
    unpruned, full = _rounds(queries, targets, zdrop_bits, prune=False)
    assert unpruned == expected
    assert full.pairs > 4 * len(queries) * 2 * len(targets)  # the targets were sliced
    assert scorer.cells < full.cells


def _stress_case(seed):
    """Targets with what pruning must not lose: a mutated copy of a region right next to it, a
    copy on the other strand, a copy on a second chromosome; queries on all of them, pieces
    that only the Z-drop splits (an insertion, an inversion), and an unrelated query."""
    rng = random.Random(seed)
    t1 = list(_random_dna(rng, 1500))
    t1[410:510] = _mutate(rng, "".join(t1[300:400]), 0.08)  # a repeat near the primary
    t1[1300:1380] = _rc(_mutate(rng, "".join(t1[600:680]), 0.04))  # a copy on the other strand
    t1 = "".join(t1)
    t2 = _random_dna(rng, 300) + _mutate(rng, t1[950:1050], 0.03) + _random_dna(rng, 300)
    a = rng.randrange(700, 760)
    queries = [
        ("near", _mutate(rng, t1[300:400], 0.02) + _random_dna(rng, 15) + _mutate(rng, t1[820:880], 0.02)),
        ("strands", _rc(_mutate(rng, t1[600:680], 0.02))),
        ("chromosomes", _random_dna(rng, 10) + _mutate(rng, t1[950:1050], 0.02)),
        ("insertion", t1[a:a + 60] + _random_dna(rng, 30) + t1[a + 60:a + 120]),
        ("inversion", t1[150:210] + _rc(t1[210:260]) + t1[260:320]),
        ("unrelated", _random_dna(rng, 120)),
    ]
    return queries, [("chrA", t1), ("chrB", t2)]


@pytest.mark.parametrize("seed", range(2))
def test_pruned_rounds_equal_the_cpu_engine_and_the_oracle_on_copies_and_zdrop_pieces(seed,
                                                                                     monkeypatch):
    """Pruning the re-scores by the parent's slice scores changes no record where it matters
    most: rivals next to the primary, on the other strand, on another chromosome, and pieces
    that the Z-drop leaves apart (their neighbours are re-scored as child segments)."""
    queries, targets = _stress_case(seed)
    encoded_q = [SCHEME.encode(*q) for q in queries]
    encoded_t = [SCHEME.encode(*t) for t in targets]
    zdrop_bits = 12.0
    expected = place_local(encoded_q, encoded_t, SCHEME, backend="cpu", zdrop_bits=zdrop_bits)
    oracle = oracles.local_placement(queries, targets, SCHEME, PARAMETERS, 1e-5,
                                     zdrop_bits * math.log(2) / PARAMETERS.lam)
    assert _records(expected) == oracle
    assert any(a.is_supplementary for a in expected) and any(not a.is_primary for a in expected)
    assert {a.strand for a in expected} == {"+", "-"} and {a.target_id for a in expected} == {"chrA", "chrB"}
    monkeypatch.setattr(placement, "SLICE_SPAN_RATIO", 2)
    monkeypatch.setattr(placement, "SLICE_MIN_COLUMNS", 1)
    pruned, scorer = _rounds(encoded_q, encoded_t, zdrop_bits, prune=True)
    unpruned, full = _rounds(encoded_q, encoded_t, zdrop_bits, prune=False)
    assert pruned == expected and unpruned == expected
    assert scorer.cells < full.cells


def _finely_sliced(queries, targets, monkeypatch):
    """Encoded ``queries`` and ``targets`` and the CPU engine's placement (Z-drop 12 bits); from
    then on the driver cuts target slices as finely as allowed."""
    encoded_q = [SCHEME.encode(*q) for q in queries]
    encoded_t = [SCHEME.encode(*t) for t in targets]
    expected = place_local(encoded_q, encoded_t, SCHEME, backend="cpu", zdrop_bits=12.0)
    monkeypatch.setattr(placement, "SLICE_SPAN_RATIO", 2)
    monkeypatch.setattr(placement, "SLICE_MIN_COLUMNS", 1)
    return encoded_q, encoded_t, expected


@pytest.mark.parametrize("launch_cells", [1, 200_000, None])
@pytest.mark.parametrize("seed", range(2))
def test_overlapping_score_calls_and_alignments_give_the_cpu_records(seed, launch_cells, monkeypatch):
    """The GPU engine's driver policy: a score call whenever passes wait, alongside running
    alignments, at most ``launch_cells`` cells a call (1: one query a call). Calls and
    alignments interleave in another order; each query's records do not change."""
    encoded_q, encoded_t, expected = _finely_sliced(*_stress_case(seed), monkeypatch)
    timing: dict = {}
    placed, _ = _rounds(encoded_q, encoded_t, 12.0, prune=True, overlap=True, launch_cells=launch_cells,
                        timing=timing)
    assert placed == expected
    one_call: dict = {}
    _rounds(encoded_q, encoded_t, 12.0, prune=True, timing=one_call)
    # A cap of one cell scores one query's passes a call: more calls than without a cap.
    assert launch_cells != 1 or timing["score_calls"] > one_call["score_calls"]


def test_cpu_score_calls_run_beside_an_alignment(monkeypatch):
    """The CPU engine's driver policy (``overlap``): while one alignment runs, the queries whose
    alignments are done get their score calls; the records do not change. The first
    alignment waits until a call has run beside it, which without this policy never happens."""
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 4)
    queries, targets = _case(0)
    beside, waiting = threading.Event(), threading.Event()
    calls = []

    class RecordingScorer(cpu.PairScorer):
        def score(self, pairs):
            calls.append(self.threads)
            if waiting.is_set():
                beside.set()
            return super().score(pairs)

    first = threading.Lock()

    def align(q, t, score):
        if first.acquire(blocking=False):
            waiting.set()
            assert beside.wait(60), "no score call ran beside the alignment"
        return cpu.align_pair(q, t, SCHEME, "local")

    scorer = RecordingScorer([t.codes for t in targets], SCHEME, threads=3)
    placed = placement._place_together(
        queries, targets, _plans(queries, targets, SCHEME, PARAMETERS, ("+", "-")), SCHEME, scorer,
        align, 12.0 * math.log(2) / PARAMETERS.lam, None, workers=3, overlap=True)
    assert placed == _rounds(queries, targets, 12.0, prune=True)[0]
    assert beside.is_set() and len(calls) > 1


def test_slices_cover_every_interval_of_the_span():
    rng = np.random.default_rng(5)
    for _ in range(300):
        t0 = int(rng.integers(0, 50))
        width = int(rng.integers(1, 400))
        span = int(rng.integers(1, 60))
        length = int(rng.integers(span + 1, 4 * span + 2))
        slices = placement._cover(t0, t0 + width, span, length)
        assert slices[0][0] == t0 and slices[-1][1] == t0 + width
        for a in range(t0, t0 + width - min(span, width) + 1):
            assert any(s0 <= a and a + min(span, width) <= s1 for s0, s1 in slices)


def test_span_bound_and_floor():
    assert placement.span_bound(10, 21, SCHEME) == 0  # 10 rows score at most 20
    bound = placement.span_bound(10, 16, SCHEME)
    assert bound == 10 + (20 - 16) // SCHEME.gap_extend
    floor = placement.significance_floor(lambda s: s >= 37, 100)
    assert floor == 37 and placement.significance_floor(lambda s: False, 5) == 6


def test_rounds_on_protein_targets_of_different_lengths_give_the_cpu_records(monkeypatch):
    """Spouge's correction makes significance depend on the target's length: the floor is the
    lowest over the targets, and the records are still the CPU engine's."""
    scheme = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
    parameters = placement.parameters_for(scheme)
    assert parameters.spouge is not None
    rng = random.Random(11)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    texts = ["".join(rng.choice(letters) for _ in range(n)) for n in (900, 150, 2400)]
    shared = texts[0][300:380]
    texts[2] = texts[2][:1000] + shared + texts[2][1080:]
    targets = [scheme.encode(f"p{k}", t) for k, t in enumerate(texts)]
    queries = [scheme.encode("two", texts[1][20:120] + texts[2][1500:1600]),
               scheme.encode("shared", shared[5:75]),
               scheme.encode("none", "".join(rng.choice(letters) for _ in range(90)))]
    expected = place_local(queries, targets, scheme, backend="cpu", strands="plus")
    monkeypatch.setattr(placement, "SLICE_SPAN_RATIO", 2)
    monkeypatch.setattr(placement, "SLICE_MIN_COLUMNS", 1)
    plans = _plans(queries, targets, scheme, parameters, ("+",))

    class Scorer(_CpuPairScorer):
        def score(self, pairs):
            self.pairs += len(pairs)
            return [cpu.score_pair(q, self.targets[t].codes[t0:t1], scheme, "local") for q, t, t0, t1 in pairs]

    scorer = Scorer(targets)
    placed = placement._place_together(
        queries, targets, plans, scheme, scorer, lambda q, t, _score: cpu.align_pair(q, t, scheme, "local"),
        placement.ZDROP_BITS * math.log(2) / parameters.lam, None, workers=2)
    assert placed == expected and {a.query_id for a in placed} == {"two", "shared"}
    assert scorer.pairs > 3 * len(targets)


def test_shared_aligner_gives_the_first_threads_the_gpu_role_and_keeps_each_threads_role():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    calls, barrier = [], threading.Barrier(5)

    def engine(name):
        def align(q, t, score):
            calls.append((threading.get_ident(), name))
            return name
        return align

    shared = placement._shared_aligner(engine("gpu"), engine("cpu"), 2)

    def twice(_):
        barrier.wait()  # all five threads take their role before any calls again
        first = shared(None, None, 0)
        barrier.wait()
        return first, shared(None, None, 0)

    with ThreadPoolExecutor(max_workers=5) as pool:
        roles = list(pool.map(twice, range(5)))
    assert sorted(first for first, _ in roles) == ["cpu", "cpu", "cpu", "gpu", "gpu"]
    assert all(first == again for first, again in roles)
    assert len({ident for ident, _ in calls}) == 5


def test_rounds_with_alignments_shared_by_two_engines_give_the_cpu_records(monkeypatch):
    """The GPU engine's rounds share each round's alignments between GPU streams and CPU
    threads; with any split the records are the CPU engine's."""
    queries, targets = _case(1)
    expected = place_local(queries, targets, SCHEME, backend="cpu", zdrop_bits=12.0)
    used = []

    def engine(name):
        def align(q, t, _score):
            used.append(name)
            return cpu.align_pair(q, t, SCHEME, "local")
        return align

    placed = placement._place_together(
        queries, targets, _plans(queries, targets, SCHEME, PARAMETERS, ("+", "-")), SCHEME,
        _CpuPairScorer(targets), placement._shared_aligner(engine("gpu"), engine("cpu"), 1),
        12.0 * math.log(2) / PARAMETERS.lam, None, workers=3)
    assert placed == expected and len(used) >= len(queries)


@pytest.mark.parametrize("seed", range(4))
def test_pruned_rounds_on_the_oracle_cases_give_the_cpu_records(seed, monkeypatch):
    """The random cases of the oracle test (test_placement.py), sliced as finely as allowed."""
    from test_placement import placement_case

    encoded_q, encoded_t, expected = _finely_sliced(*placement_case(seed), monkeypatch)
    pruned, scorer = _rounds(encoded_q, encoded_t, 12.0, prune=True)
    unpruned, full = _rounds(encoded_q, encoded_t, 12.0, prune=False)
    assert pruned == expected == unpruned and scorer.cells < full.cells


@pytest.mark.parametrize("case", ["stress", "oracle"])
def test_cpu_engine_on_two_and_four_threads_equals_one_thread_and_the_oracle(case, monkeypatch):
    """The CPU engine scores a call's passes and aligns its windows on a pool of ``threads``
    workers: 2 and 4 workers give one worker's records, which are the oracle's; the cells that
    progress reports (from the workers) do not depend on the workers either."""
    from test_placement import placement_case

    queries, targets = _stress_case(0) if case == "stress" else placement_case(1)
    encoded_q = [SCHEME.encode(*q) for q in queries]
    encoded_t = [SCHEME.encode(*t) for t in targets]
    zdrop_bits = 12.0
    oracle = oracles.local_placement(queries, targets, SCHEME, PARAMETERS, 1e-5,
                                     zdrop_bits * math.log(2) / PARAMETERS.lam)
    # Four workers on any machine (the workers run one-thread kernels), and many slices a pass.
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 4)
    monkeypatch.setattr(placement, "SLICE_SPAN_RATIO", 2)
    monkeypatch.setattr(placement, "SLICE_MIN_COLUMNS", 1)
    runs = {}
    for threads in (1, 2, 4):
        progress, per_query = [], []
        placed = place_local(encoded_q, encoded_t, SCHEME, backend="cpu", zdrop_bits=zdrop_bits,
                             threads=threads, on_progress=progress.append, on_cells=per_query.append)
        # Queries finish in an order that depends on the workers; each one's cells do not.
        runs[threads] = placed, sum(progress), sorted(per_query)
    assert _records(runs[1][0]) == oracle and len(oracle) > len(queries) // 2
    assert runs[2] == runs[1] and runs[4] == runs[1]
