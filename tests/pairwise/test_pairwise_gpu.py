"""The GPU pairwise engine against the CPU engine: identical scores, end cells and CIGARs.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere).
Short random cases cover DNA and protein, all modes, both strands, lengths 0 to
a few thousand, and low-complexity repeats that make many equal-score paths.
Forcing a 64-row/column checkpoint interval makes the chunked traceback cross
many chunks at small sizes. Long related pairs (100 kbp, 1 Mbp) check the
scoring sweep and the traceback at the sizes they are built for.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pairwise_cpu import (DNA_SCHEMES, SCHEMES, check_alignment, random_case, random_text,
                               related_text)

from gpualign_plugin.cli.bench import related_pair
from gpualign_plugin.errors import InputError
from gpualign_plugin.model import score_cigar
from gpualign_plugin.pairwise import api as pairwise_api
from gpualign_plugin.pairwise import cpu
from gpualign_plugin.pairwise.modes import MODES
from gpualign_plugin.runtime import kernels
from gpualign_plugin.scoring import ScoringScheme

pytestmark = pytest.mark.gpu

BENCH_SCHEME = ScoringScheme.dna(match=1, mismatch=-3, gap_open=3, gap_extend=2)


def gpu():
    from gpualign_plugin.pairwise import gpu as pairwise

    return pairwise


def assert_same(q, t, scheme, mode, every=None):
    """GPU score and alignment equal the CPU engine's, field by field."""
    expected_score = cpu.score_pair(q, t, scheme, mode)
    assert gpu().score_pair(q, t, scheme, mode) == expected_score
    expected = cpu.align_pair(q, t, scheme, mode)
    got = gpu().align_pair(q, t, scheme, mode, checkpoint_every=every)
    assert got == expected, (str(got.cigar), str(expected.cigar))
    if got.score or mode != "local":
        check_alignment(got, q, t, scheme, mode)
    return got


@pytest.mark.parametrize("mode", MODES)
def test_random_short_pairs_equal_cpu(mode):
    rng = np.random.default_rng(11 + MODES.index(mode))
    for _ in range(400):
        scheme, q, t = random_case(rng, 120)
        assert_same(q, t, scheme, mode)


@pytest.mark.parametrize("mode", MODES)
def test_tiny_checkpoints_cross_many_chunks(mode):
    rng = np.random.default_rng(23 + MODES.index(mode))
    for _ in range(150):
        scheme, q, t = random_case(rng, 700)
        assert_same(q, t, scheme, mode, every=64)


@pytest.mark.parametrize("mode", MODES)
def test_repeats_with_many_ties_equal_cpu(mode):
    rng = np.random.default_rng(37 + MODES.index(mode))
    for _ in range(120):
        scheme, q, t = random_case(rng, 400, tie_heavy=True)
        assert_same(q, t, scheme, mode, every=64 if rng.random() < 0.5 else None)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("length", [1, 31, 32, 33, 63, 64, 65, 255, 256, 257, 2049, 3000])
def test_lengths_around_warp_strip_and_batch_edges(mode, length):
    rng = np.random.default_rng(length)
    for scheme in (SCHEMES[0], SCHEMES[4]):
        letters = 4 if scheme.is_dna else 20
        target = rng.integers(0, letters, length, dtype=np.uint8)
        query = target.copy()
        query[rng.random(length) < 0.1] = rng.integers(0, letters, dtype=np.uint8)
        other = rng.integers(0, letters, max(1, length // 2 + 7), dtype=np.uint8)
        assert_same(query, target, scheme, mode)
        assert_same(other, target, scheme, mode, every=64)
        assert_same(target, other, scheme, mode, every=128)


def copy_then_unrelated(rng, scheme, target, start, copied, tail, rate):
    """A query that copies ``target[start:start+copied]`` (mutated at ``rate``) and then goes on
    with ``tail`` unrelated residues: once the strips holding the copy have scored it, a strip
    below it can gain at most one best substitution per remaining row, less than the copy scored,
    so block pruning must skip its batches away from the copy, however the strips are timed."""
    letters = 4 if scheme.is_dna else 20
    piece = scheme.alphabet.decode(target[start:start + copied])
    copy = scheme.alphabet.encode(related_text(rng, scheme, piece, rate) if rate else piece)
    return np.concatenate([copy, rng.integers(0, letters, tail, dtype=np.uint8)])


@pytest.mark.parametrize("scheme_index", [0, 2, 4, 6])
def test_block_pruning_skips_cells_and_keeps_the_result(scheme_index):
    scheme = SCHEMES[scheme_index]
    rng = np.random.default_rng(500 + scheme_index)
    letters = 4 if scheme.is_dna else 20
    target = rng.integers(0, letters, 30_000 if scheme.is_dna else 8_000, dtype=np.uint8)
    query = copy_then_unrelated(rng, scheme, target, 0, 3_000 if scheme.is_dna else 1_500, 500, 0)
    counts: dict = {}
    score = gpu()._score(query, target, scheme, "local", 0, profile=counts, packed=False)
    assert counts["pruned_cells"] > 0.2 * len(query) * len(target) * (1 if scheme.is_dna else 0.2)
    assert score == gpu()._score(query, target, scheme, "local", 0, prune=False, packed=False) == \
        cpu.score_pair(query, target, scheme, "local")
    profile: dict = {}
    got = gpu().align_pair(query, target, scheme, "local", checkpoint_every=64, profile=profile)
    assert profile["pruned_cells"] > 0
    assert got == gpu().align_pair(query, target, scheme, "local", checkpoint_every=64, prune=False) == \
        cpu.align_pair(query, target, scheme, "local")


@pytest.mark.parametrize("seed", range(8))
def test_block_pruning_with_ties_repeats_and_mutated_copies_equals_cpu(seed):
    # Copies at random places in low-complexity or random targets, mutated or not, with a random
    # start: equal-score paths beside pruned blocks, checkpoints every 64 rows and columns inside them.
    rng = np.random.default_rng(700 + seed)
    scheme = SCHEMES[seed % len(SCHEMES)]
    target = scheme.alphabet.encode(random_text(rng, scheme, 6_000, tie_heavy=seed % 2 == 1))
    start = int(rng.integers(0, 4_000))
    head = scheme.alphabet.encode(random_text(rng, scheme, int(rng.integers(0, 200))))
    query = np.concatenate([head, copy_then_unrelated(rng, scheme, target, start, 1_500, 300,
                                                      0.03 if seed % 4 < 2 else 0)])
    assert_same(query, target, scheme, "local", every=64)
    assert gpu().align_pair(query, target, scheme, "local", checkpoint_every=64, prune=False) == \
        gpu().align_pair(query, target, scheme, "local", checkpoint_every=64)


def test_empty_sequences_follow_the_cpu_engine():
    scheme = SCHEMES[0]
    seq = scheme.alphabet.encode("ACGTAC")
    empty = seq[:0]
    for mode in MODES:
        for q, t in ((empty, seq), (seq, empty), (empty, empty)):
            assert_same(q, t, scheme, mode)


@pytest.mark.parametrize("mode", MODES)
def test_both_strands_through_align_sequences(mode):
    rng = np.random.default_rng(5)
    for k in range(60):
        scheme = DNA_SCHEMES[k % len(DNA_SCHEMES)]
        q_text = random_text(rng, scheme, int(rng.integers(0, 300)), tie_heavy=k % 4 == 0)
        t_text = related_text(rng, scheme, q_text) if k % 2 else random_text(rng, scheme, 200)
        query = scheme.encode(f"q{k}", q_text)
        target = scheme.encode(f"t{k}", t_text)
        for strand in "+-":
            on_cpu = pairwise_api.align_sequences(query, target, scheme, mode, strand, backend="cpu")
            on_gpu = pairwise_api.align_sequences(query, target, scheme, mode, strand, backend="gpu")
            assert on_gpu == on_cpu


@settings(max_examples=60, deadline=None)
@given(st.text("ACGT", max_size=200), st.text("ACGT", max_size=200), st.sampled_from(MODES),
       st.sampled_from([None, 64]))
def test_property_gpu_equals_cpu(q_text, t_text, mode, every):
    scheme = SCHEMES[1]
    assert_same(scheme.alphabet.encode(q_text), scheme.alphabet.encode(t_text), scheme, mode, every)


def test_scores_outside_int8_are_refused():
    scheme = ScoringScheme.dna(match=200, mismatch=-3)
    codes = scheme.alphabet.encode("ACGT")
    with pytest.raises(InputError, match="between -128 and 127"):
        gpu().score_pair(codes, codes, scheme, "local")


def test_memory_budget_too_small_is_a_clear_error():
    q, t = related_pair(3000, 3000, 0.02, 3)
    with pytest.raises(kernels.GpuMemoryError, match="budget"):
        gpu().align_pair(q, t, BENCH_SCHEME, "global", memory_budget=1000, checkpoint_every=64)


@pytest.mark.parametrize("mode", MODES)
def test_100kbp_related_pair_scores_equal_cpu(mode):
    # The CPU engine scores one pair on one core (about 0.2 GCUPS): 100 kbp x 100 kbp in local mode,
    # and a 100 kbp query against a 25 kbp stretch of the target in the end-to-end modes.
    q, t = related_pair(100_000, 100_000, 0.02, 7)
    if mode != "local":
        t = t[:25_000]
    got_score = gpu().score_pair(q, t, BENCH_SCHEME, mode)
    assert got_score == cpu.score_pair(q, t, BENCH_SCHEME, mode)
    got = gpu().align_pair(q, t, BENCH_SCHEME, mode)
    assert (got.score, got.query_end, got.target_end) == (got_score.score, got_score.query_end,
                                                         got_score.target_end)
    check_alignment(got, q, t, BENCH_SCHEME, mode)


def test_30kbp_related_pair_alignment_equals_cpu():
    q, t = related_pair(30_000, 30_000, 0.02, 8)
    assert gpu().align_pair(q, t, BENCH_SCHEME, "local") == cpu.align_pair(q, t, BENCH_SCHEME, "local")
    # Default chunks (4096) and small ones: the same path either way.
    assert gpu().align_pair(q, t, BENCH_SCHEME, "global", checkpoint_every=512) == \
        cpu.align_pair(q, t, BENCH_SCHEME, "global")


def test_1mbp_related_pair_alignment_rescored():
    q, t = related_pair(1_000_000, 1_000_000, 0.02, 9)
    score = gpu().score_pair(q, t, BENCH_SCHEME, "local")
    got = gpu().align_pair(q, t, BENCH_SCHEME, "local")
    assert (got.score, got.query_end, got.target_end) == (score.score, score.query_end,
                                                         score.target_end)
    piece_q = q[got.query_start:got.query_end]
    piece_t = t[got.target_start:got.target_end]
    assert score_cigar(got.cigar, piece_q, piece_t, BENCH_SCHEME) == got.score
    # The pair is related end to end: the local alignment spans most of both sequences.
    assert got.query_end - got.query_start > 900_000


@pytest.mark.long_cpu_reference
@pytest.mark.parametrize("mode, length", [("local", 1_000_000), ("global", 300_000)])
def test_long_pair_score_equals_tiled_cpu_score_on_all_cores(mode, length):
    # Issue 5: the GPU score equals the CPU engine's run on every core of the GPU machine
    # (the tiled wavefront kernel; 1 Mbp x 1 Mbp is 10^12 cells, a few minutes on 16 cores).
    import numba

    q, t = related_pair(length, length, 0.02, 9)
    threads = numba.config.NUMBA_NUM_THREADS
    assert gpu().score_pair(q, t, BENCH_SCHEME, mode) == \
        cpu.score_pair(q, t, BENCH_SCHEME, mode, threads=threads)


def test_progress_moves_during_one_long_pair_and_adds_up(monkeypatch):
    """ONE 400 kbp pair through a heartbeat on a non-terminal stream: the score pass (one
    kernel launch) reports cells while it runs -- a host thread reads the strips' ready
    flags -- and the traceback each region sweep and window of chunks. The counts grow, add
    up to m n plus the traceback's cells, and the alignment is the one computed without."""
    import io
    import re

    from gpualign_plugin.cli.common import Progress

    pairwise = gpu()
    monkeypatch.setattr(pairwise, "POLL_SECONDS", 0.002)  # many looks during one ~0.1 s kernel
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0")  # lines taken at each report instead
    q, t = related_pair(400_000, 400_000, 0.02, 11)
    m, n = len(q), len(t)
    reports, lines, profile = [], [], {}
    with Progress(pairwise.align_cells(m, n, BENCH_SCHEME, "local"), "pairwise",
                  stream=io.StringIO()) as bar:
        def advance(cells: int) -> None:
            reports.append(cells)
            bar.advance(cells)
            lines.append(bar.heartbeat_line())

        got = pairwise.align_pair(q, t, BENCH_SCHEME, "local", profile=profile, progress=advance)
    assert got == pairwise.align_pair(q, t, BENCH_SCHEME, "local")
    assert min(reports) > 0
    assert sum(reports) == m * n + profile["region_cells"] + profile["chunk_cells"]
    cumulative = np.cumsum(reports).tolist()
    during_score = sum(1 for c in cumulative if c < m * n)
    assert during_score >= 3, reports  # several reports while the one score kernel ran
    assert m * n in cumulative and len(cumulative) > during_score + 1  # then the traceback's
    percents = [float(re.search(r"pairwise: ([\d.]+)% \(", line).group(1)) for line in lines]
    assert percents == sorted(percents) and len(set(percents)) >= 4


@pytest.mark.parametrize("mode", ["local", "global"])
def test_progress_of_short_sweeps_comes_when_they_end(mode):
    """Below POLL_CELLS no thread looks at the flags: one report of m n per score pass."""
    q, t = related_pair(3000, 2000, 0.02, 12)
    reports = []
    assert gpu().score_pair(q, t, BENCH_SCHEME, mode, progress=reports.append) == \
        gpu().score_pair(q, t, BENCH_SCHEME, mode)
    assert reports == [len(q) * len(t)]
