"""The packed score sweep (``pairwise/packed16.cu``: two strips per warp, 16-bit values relative
to a base per lane) against the CPU engine and the 32-bit striped sweep.

Which schemes it takes is checked on any machine; everything else needs a GPU (marker ``gpu``).
The GPU cases cross the kernel's edges: double strips of 1,024 rows (and strips of 512 inside
them), batches of 32 columns, padding rows, ambiguity codes, runs of N, equal-score repeats,
and scores far outside 16 bits (long identical pairs, very negative global scores), in all three
modes and every DNA scheme of the CPU tests. An alignment's score pass with the packed sweep
writes the checkpoints its traceback starts from: the alignments are the CPU's and those of the
striped score pass.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_pairwise_cpu import DNA_SCHEMES, random_text, related_text

from gpualign_plugin.cli.bench import related_pair
from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Cigar, PairAlignment, PairScore, score_cigar
from gpualign_plugin.pairwise import cpu
from gpualign_plugin.pairwise.modes import MODES
from gpualign_plugin.scoring import DNA, ScoringScheme

BENCH_SCHEME = ScoringScheme.dna(match=1, mismatch=-3, gap_open=3, gap_extend=2)


def gpu():
    from gpualign_plugin.pairwise import gpu as pairwise

    return pairwise


def test_packed_table_holds_shifted_scores_and_the_sentinel():
    table = gpu().packed_table(ScoringScheme.dna(match=2, mismatch=-3, gap_open=5, gap_extend=2, ambiguity=-1))
    expected = np.full((6, 6), -128)
    expected[:5, :5] = -1 + 7
    expected[:4, :4] = -3 + 7
    np.fill_diagonal(expected[:4, :4], 2 + 7)
    assert table.dtype == np.int8 and np.array_equal(table, expected)


@pytest.mark.parametrize("scheme", [ScoringScheme.from_matrix("NUC.4.4"), ScoringScheme.from_matrix("BLOSUM62"),
                                    ScoringScheme.dna(match=100, mismatch=-3, gap_open=50, gap_extend=2),
                                    ScoringScheme.dna(match=100, mismatch=-100, gap_open=0, gap_extend=1000)],
                         ids=["IUPAC scores", "protein", "shifted above int8", "steps too large"])
def test_schemes_the_packed_sweep_cannot_hold_exactly_are_left_to_the_striped_one(scheme):
    assert gpu().packed_table(scheme) is None


@pytest.mark.parametrize("scheme", DNA_SCHEMES, ids=lambda s: s.name)
def test_every_dna_scheme_of_the_cpu_tests_is_packed(scheme):
    assert gpu().packed_table(scheme) is not None


def packed(q, t, scheme, mode):
    return gpu()._score(q, t, scheme, mode, 0, packed=True)


def with_ambiguity(rng, codes):
    """Runs of N and scattered IUPAC codes (codes 4..14) in a copy of ``codes``."""
    out = codes.copy()
    if len(out) > 10:
        start = int(rng.integers(0, len(out) - 5))
        out[start:start + int(rng.integers(1, 60))] = DNA.encode("N")[0]
    scattered = rng.random(len(out)) < 0.02
    out[scattered] = rng.integers(4, DNA.size, int(scattered.sum()))
    return out


def cases(seed):
    """(query, target) pairs around the kernel's edges, random, related and ambiguous."""
    rng = np.random.default_rng(seed)
    scheme = DNA_SCHEMES[0]
    sizes = [(1, 1), (1, 9), (9, 1), (2, 2), (31, 33), (33, 31), (511, 40), (512, 64), (513, 65),
             (1023, 97), (1024, 100), (1025, 31), (40, 1025), (2047, 300), (2049, 129), (3000, 2500)]
    out = []
    for m, n in sizes:
        q = DNA.encode(random_text(rng, scheme, m, tie_heavy=rng.random() < 0.3))
        if rng.random() < 0.6 and n <= m:
            t = DNA.encode(related_text(rng, scheme, DNA.decode(q)))[:n]
            t = t if len(t) else q[:1]
        else:
            t = DNA.encode(random_text(rng, scheme, n))
        out.append((q, t))
        out.append((with_ambiguity(rng, q), with_ambiguity(rng, t)))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scheme", DNA_SCHEMES, ids=lambda s: s.name)
def test_packed_sweep_equals_cpu_around_its_edges(mode, scheme):
    for q, t in cases(len(mode) + 7 * DNA_SCHEMES.index(scheme)):
        assert packed(q, t, scheme, mode) == cpu.score_pair(q, t, scheme, mode), (len(q), len(t))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
def test_repeats_with_many_equal_scores_keep_the_cpu_end_cell(mode):
    # Equal-score cells in many rows and columns: the end cell is the CPU's (score, row, column) rule.
    for period, m, n in [(2, 1500, 1300), (3, 1100, 2100), (7, 2600, 900)]:
        unit = "ACGTTGCA"[:period]
        q = DNA.encode((unit * m)[:m])
        t = DNA.encode(("T" + unit * n)[:n])
        assert packed(q, t, BENCH_SCHEME, mode) == cpu.score_pair(q, t, BENCH_SCHEME, mode)


@pytest.mark.gpu
@pytest.mark.parametrize("offset", [0, 3, 500, 512, 520, 1024, 1100])
def test_a_later_tie_in_an_earlier_row_takes_the_end_cell(offset):
    # Score 6 first at row offset + 12 (column 27), then again at row offset + 6 (column 53): the
    # later cell wins by its row. The sweep finds the row of a new best only when a tie (or the
    # end) needs it, so this tie must look up the earlier cell's row, in one lane of either strip,
    # across two lanes (offset 520) or in the next double strip.
    query = DNA.encode("G" * offset + "AAAAAACCCCCC")
    target = DNA.encode("T" * 20 + "GCCCCCC" + "T" * 20 + "AAAAAA" + "T" * 20)
    assert packed(query, target, BENCH_SCHEME, "local") == PairScore(6, offset + 6, 53)
    assert packed(target, query, BENCH_SCHEME, "local") == cpu.score_pair(target, query, BENCH_SCHEME, "local")


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["global", "semiglobal"])
def test_leading_gaps_across_lane_strip_and_warp_edges(mode):
    # An unrelated head before a copy of the target: the best path runs down column 0 (or along
    # row 0) into the copy, through the boundary values of rows that start their sweep later.
    rng = np.random.default_rng(9)
    for scheme in DNA_SCHEMES:
        for head in (15, 16, 17, 20, 33, 511, 512, 517, 1023, 1030):
            target = rng.integers(0, 4, 600, dtype=np.uint8)
            query = np.concatenate([rng.integers(0, 4, head, dtype=np.uint8), target])
            assert packed(query, target, scheme, mode) == cpu.score_pair(query, target, scheme, mode), head
            assert packed(target, query, scheme, mode) == cpu.score_pair(target, query, scheme, mode), head


@pytest.mark.gpu
def test_scores_far_outside_16_bits():
    # 70 kbp identical: local score 140,000; a short query in a long target: global scores near
    # -(5 + 2 * 60,000). Values are relative to moving bases, so both stay exact.
    rng = np.random.default_rng(3)
    scheme = DNA_SCHEMES[0]
    q = rng.integers(0, 4, 70_000, dtype=np.uint8)
    assert packed(q, q, scheme, "local") == PairScore(140_000, 70_000, 70_000)
    short = rng.integers(0, 4, 3_000, dtype=np.uint8)
    target = np.concatenate([rng.integers(0, 4, 30_000, dtype=np.uint8), short,
                             rng.integers(0, 4, 30_000, dtype=np.uint8)])
    for mode in MODES:
        assert packed(short, target, scheme, mode) == cpu.score_pair(short, target, scheme, mode)
        assert packed(target, short, scheme, mode) == cpu.score_pair(target, short, scheme, mode)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
def test_packed_and_striped_sweeps_agree_on_a_related_300kbp_pair(mode):
    q, t = related_pair(300_000, 290_000, 0.03, 21)
    counts: dict = {}
    got = gpu()._score(q, t, BENCH_SCHEME, mode, 0, profile=counts)
    assert counts["kernel"] == "packed16"
    assert got == gpu()._score(q, t, BENCH_SCHEME, mode, 0, packed=False, prune=False)


@pytest.mark.gpu
def test_the_engine_chooses_the_packed_sweep_only_where_it_applies():
    q, t = related_pair(5_000, 5_000, 0.02, 4)
    for scheme, devices, expected in [(BENCH_SCHEME, None, "packed16"), (ScoringScheme.from_matrix("NUC.4.4"), None,
                                      "striped"), (BENCH_SCHEME, [0, 0], "striped")]:
        counts: dict = {}
        gpu()._score(q, t, scheme, "local", 0, profile=counts, devices=devices)
        assert counts["kernel"] == expected
    with pytest.raises(InputError, match="packed"):
        gpu()._score(q, t, ScoringScheme.from_matrix("NUC.4.4"), "local", 0, packed=True)


@pytest.mark.gpu
def test_progress_of_a_long_packed_sweep_comes_while_it_runs(monkeypatch):
    pairwise = gpu()
    monkeypatch.setattr(pairwise, "POLL_CELLS", 0)
    monkeypatch.setattr(pairwise, "POLL_SECONDS", 0.002)
    q, t = related_pair(400_000, 400_000, 0.02, 5)
    reports: list = []
    got = pairwise._score(q, t, BENCH_SCHEME, "local", 0, progress=reports.append, packed=True)
    assert got == pairwise._score(q, t, BENCH_SCHEME, "local", 0, packed=True)
    assert sum(reports) == len(q) * len(t) and min(reports) > 0 and len(reports) >= 3


def aligned_both_ways(q, t, scheme, mode, intervals):
    """The GPU alignment with the packed score pass (checked to run) and with the striped one."""
    pairwise = gpu()
    profile: dict = {}
    got = pairwise.align_pair(q, t, scheme, mode, intervals=intervals, profile=profile)
    assert profile["kernel"] == "packed16", intervals
    plan = pairwise.plan_memory(len(q), len(t), 2**30, pairwise.probe(0).multiprocessors, mode == "local",
                                scheme.alphabet.size, intervals)
    striped: dict = {}
    assert got == pairwise._align_planned(q, t, scheme, mode, [0], plan, time.perf_counter(), striped, packed=False)
    assert striped["kernel"] == "striped"
    return got


def checkpoint_cases(seed):
    """(query, target) pairs crossing many checkpoint rows and columns: related, ambiguous, long
    and wide, with lengths on and off the double strips' and checkpoints' edges."""
    rng = np.random.default_rng(seed)
    scheme = DNA_SCHEMES[0]
    out = []
    for m, n in [(5000, 4700), (4096, 4096), (3073, 9000), (9000, 2100), (2049, 2049)]:
        q = DNA.encode(random_text(rng, scheme, m))
        t = DNA.encode(related_text(rng, scheme, DNA.decode(q)))[:n]
        if len(t) < n:
            t = np.concatenate([DNA.encode(random_text(rng, scheme, n - len(t))), t])
        out.append((with_ambiguity(rng, q), with_ambiguity(rng, t)))
    out.append((DNA.encode(random_text(rng, scheme, 3000)), DNA.encode(random_text(rng, scheme, 3500))))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("intervals", [(1024,), (2048,), (1024, 256)], ids=str)
def test_the_packed_score_pass_writes_the_checkpoints_of_the_cpu_alignment(mode, intervals):
    scheme = BENCH_SCHEME if intervals == (2048,) else DNA_SCHEMES[0]
    for q, t in checkpoint_cases(len(mode) + intervals[-1]):
        got = aligned_both_ways(q, t, scheme, mode, intervals)
        assert got == cpu.align_pair(q, t, scheme, mode), (len(q), len(t))
        assert score_cigar(got.cigar, q[got.query_start:got.query_end], t[got.target_start:got.target_end],
                           scheme) == got.score


@pytest.mark.gpu
def test_packed_checkpoints_hold_scores_far_outside_16_bits():
    # Checkpoint values of 40,000 (local, identical) and near -(5 + 2 * 27,000) (global, a short
    # query in a long target) are written from 16-bit values relative to moving bases.
    rng = np.random.default_rng(8)
    scheme = DNA_SCHEMES[0]
    q = rng.integers(0, 4, 20_000, dtype=np.uint8)
    got = aligned_both_ways(q, q, scheme, "local", (4096,))
    assert got == PairAlignment(40_000, 0, 20_000, 0, 20_000, Cigar(((20_000, "="),)))
    short = rng.integers(0, 4, 3_000, dtype=np.uint8)
    target = np.concatenate([rng.integers(0, 4, 12_000, dtype=np.uint8), short,
                             rng.integers(0, 4, 15_000, dtype=np.uint8)])
    for mode in ("global", "semiglobal"):
        got = aligned_both_ways(short, target, scheme, mode, (1024,))
        assert got == cpu.align_pair(short, target, scheme, mode)


@pytest.mark.gpu
def test_intervals_the_packed_sweep_cannot_checkpoint_stay_striped():
    q, t = related_pair(6_000, 6_000, 0.02, 6)
    for intervals in [(3072,), (512,), (192,)]:
        profile: dict = {}
        got = gpu().align_pair(q, t, BENCH_SCHEME, "local", intervals=intervals, profile=profile)
        assert profile["kernel"] == "striped"
        assert got == cpu.align_pair(q, t, BENCH_SCHEME, "local")


def test_checkpoint_intervals_of_the_packed_sweep():
    assert [gpu().packs_checkpoints(e) for e in (1024, 2048, 4096, 1 << 20)] == [True] * 4
    assert [gpu().packs_checkpoints(e) for e in (0, 64, 512, 3072, 1536)] == [False] * 5
