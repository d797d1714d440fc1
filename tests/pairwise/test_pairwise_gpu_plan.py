"""The GPU engine's host-side arithmetic, on the CPU: the alignment's memory planner (plans fit
their budget, a too-small budget names the smallest that works, and the memory formula adds up
the arrays the engine allocates), the end-cell rule over the score kernels' strips, and the
column slabs of a pair split over devices (their bounds, and the host record of the kernel's
``SlabLink`` field for field), the refusal of schemes outside the kernels' int8 profiles, and
the sweeps' progress report where no thread watches their flags.

No GPU is needed: :func:`gpualign_plugin.pairwise.gpu.plan_memory` is plain arithmetic
(the multiprocessor count is an argument; 132 is an H200's, 114 an H100's), and
:func:`~gpualign_plugin.pairwise.gpu.local_end_cells` works on host arrays.
"""

import argparse
import re

import numpy as np
import pytest

from gpualign_plugin.cli.common import memory_size
from gpualign_plugin.errors import InputError
from gpualign_plugin.pairwise import gpu
from gpualign_plugin.runtime.kernels import GpuMemoryError

GiB, MiB = 2**30, 2**20


@pytest.mark.parametrize("m, n", [(1000, 800), (40000, 40000), (10**6, 10**6), (10**7, 9 * 10**6),
                                  (2 * 10**7, 2 * 10**7)])
@pytest.mark.parametrize("budget", [64 * MiB, GiB, 16 * GiB, 70 * GiB])
@pytest.mark.parametrize("local", [True, False])
def test_plan_fits_its_budget_or_names_the_smallest_that_would(m, n, budget, local):
    try:
        plan = gpu.plan_memory(m, n, budget, 132, local)
    except GpuMemoryError as exc:
        needed = int(re.search(r"--gpu-memory (\d+)M", str(exc)).group(1)) * MiB
        assert needed > budget
        plan = gpu.plan_memory(m, n, needed, 132, local)
        assert plan.bytes + gpu.MEMORY_SLACK <= needed
        with pytest.raises(GpuMemoryError):
            gpu.plan_memory(m, n, needed - 2 * MiB, 132, local)
        return
    assert plan.bytes + gpu.MEMORY_SLACK <= budget
    assert all(e % 64 == 0 for e in plan.intervals)
    assert list(plan.intervals) == sorted(plan.intervals, reverse=True)
    assert plan.intervals[-1] in gpu.LEAF_INTERVALS


def test_chromosome_pairs_fit_16_gib_and_small_ones_keep_one_level():
    # The goal: 20 Mbp x 20 Mbp in at most 16 GiB (here, by the formula).
    plan = gpu.plan_memory(2 * 10**7, 2 * 10**7, 16 * GiB, 132)
    assert plan.bytes <= 16 * GiB and len(plan.intervals) >= 2
    # A 1 Mbp pair with room to spare keeps the single 4096 level measured fastest.
    assert gpu.plan_memory(10**6, 10**6, 60 * GiB, 132).intervals == (4096,)
    # 250 Mbp x 230 Mbp (chromosome 1 against chromosome 2 sizes) fits an 80 GB card.
    assert gpu.plan_memory(250 * 10**6, 230 * 10**6, 70 * GiB, 114).bytes <= 70 * GiB


def test_budget_error_is_one_line_with_both_numbers():
    with pytest.raises(GpuMemoryError) as info:
        gpu.plan_memory(2 * 10**7, 2 * 10**7, 4 * MiB, 132)
    message = str(info.value)
    assert "\n" not in message and "budget is 4 MiB" in message and "--gpu-memory" in message


def test_smaller_budgets_never_give_bigger_plans():
    sizes = [gpu.plan_memory(3 * 10**6, 3 * 10**6, b * GiB, 132).bytes for b in (64, 16, 4, 1)]
    assert sizes == sorted(sizes, reverse=True)


def test_formula_is_the_sum_of_the_arrays_the_engine_allocates():
    # Two levels forced on a 10000 x 7000 local problem, window 8, 132 SMs: every array the
    # engine allocates, written out from its shape (int32 = 4 bytes, pool rounding to 512).
    m, n = 10000, 7000
    plan = gpu.plan_memory(m, n, GiB, 132, True, 4, intervals=(2048, 256))
    r0, r1 = plan.rows_per_lane
    pool = lambda nbytes: -(-nbytes // 512) * 512  # noqa: E731
    pad = lambda h, s: -(-h // s) * s  # noqa: E731
    sequences = pool(m) + pool(n) + pool(64) + 2 * pool(4 * (n + 1)) + 2 * pool(4 * m)
    level0 = pool(8 * ((m - 1) // 2048) * (n + 1)) + pool(8 * ((n - 1) // 2048) * (pad(m, 32 * r0) + 1))
    level1 = (pool(8 * (2047 // 256) * 2049) + pool(8 * (2047 // 256) * (pad(2048, 32 * r1) + 1))
              + 2 * pool(4 * 2049) + 2 * pool(4 * 2048))
    window = min(plan.window, 8)
    leaf_dirs = pool(window * window * 256 * (256 + 31) // 2)  # four bits a cell

    def sweep(h, w, s, best=False):  # the boundary row and column are read in place
        return (pool(pad(h, s)) + pool(16 * w) + pool(8 * -(-w // 32)) + pool(4)
                + (pool(12 * pad(h, s) // s) if best else 0))

    # The packed sweep's: letter classes of 10 double strips of 1024 rows and of the columns, the
    # 6 x 6 table, column 0, hand-over rows, flags, ticket, best cells and best score.
    packed = (pool(10240) + pool(n) + pool(36) + pool(4 * 10241) + pool(16 * n) + pool(8 * -(-n // 32)) + pool(4)
              + pool(12 * 10) + pool(4))
    transient = max(sweep(m, n, 32 * r0, best=True), packed, sweep(2048, 2048, 32 * r1))
    # Each stream's hand-over rows and flags + ticket for chunks of 256 columns, and the query
    # padded by a strip of 512 rows: made once, reused by every chunk.
    leaf = window * window * (pool(16 * 256) + pool(4 * (2 * 8 + 1))) + pool(m + 512)
    assert plan.bytes == sequences + level0 + level1 + leaf_dirs + transient + leaf


def test_intervals_must_be_multiples_of_64():
    with pytest.raises(InputError, match="multiple of 64"):
        gpu.plan_memory(5000, 5000, GiB, 132, intervals=(1000,))


def test_memory_sizes_parse_with_binary_units():
    assert memory_size("12G") == 12 * GiB
    assert memory_size("1.5GiB") == 3 * GiB // 2
    assert memory_size("512m") == 512 * MiB
    assert memory_size("1000000") == 1000000
    for bad in ("", "G", "twelve", "-1G", "0"):
        with pytest.raises(argparse.ArgumentTypeError):
            memory_size(bad)


def test_model_prefers_fewer_bytes_only_among_near_fastest_plans():
    budget = 64 * GiB
    plan = gpu.plan_memory(10**7, 10**7, budget, 132)
    for levels in (1, 2):
        for chain in gpu._chains(10**7, 10**7, levels):
            for other in gpu._evaluate(10**7, 10**7, chain, (8, 4, 2, 1), 132, True, 4):
                if other.bytes + gpu.MEMORY_SLACK <= budget:
                    assert plan.seconds <= gpu.NEAR_FASTEST * other.seconds + 1e-9
    assert np.isfinite(plan.seconds)


def test_flag_cells_counts_the_strips_that_handed_each_batch_over():
    """A running sweep's progress from its ready flags: strips 0..K_c finished column batch c
    (the larger entry of the two strip parities), capped at the rectangle's height."""
    strip, height, width = 64, 300, 70  # 5 strips (the last one partial), 3 batches (32, 32, 6)
    flags = np.full(6, -1, dtype=np.int32)
    assert gpu.flag_cells(flags, strip, height, width) == 0
    flags[[0, 1, 2]] = [2, 0, 0]  # strips 0 and 2 (even) published batches 0..2 at some point
    flags[[3, 4]] = [1, 1]        # strip 1 (odd) published batches 0 and 1
    # batch 0: strips 0..2 (192 rows); batch 1: 0..1 (128 rows); batch 2: strip 0 (64 rows).
    assert gpu.flag_cells(flags, strip, height, width) == 192 * 32 + 128 * 32 + 64 * 6
    flags[:3] = 4  # cannot exceed the height, even if (K + 1) strips would
    flags[3:] = 3
    assert gpu.flag_cells(flags, strip, height, width) == height * width
    # It never decreases as entries grow, whichever parity moves.
    rng = np.random.default_rng(3)
    flags = np.full(2 * 40, -1, dtype=np.int32)
    seen = 0
    for _ in range(200):
        k = rng.integers(0, len(flags))
        flags[k] = min(flags[k] + rng.integers(1, 3), 30)
        now = gpu.flag_cells(flags, 64, 31 * 64, 40 * 32)
        assert now >= seen
        seen = now


@pytest.mark.parametrize("m, n", [(1000, 800), (40000, 40000), (10**6, 10**6)])
def test_traceback_cells_of_a_plan(m, n):
    """The progress bar's estimate of the traceback: a pair inside one window of chunks
    re-solves about its own matrix once (whole chunks); a long one crosses (m + n) / e
    chunks of each level, far fewer than m n cells."""
    plan = gpu.plan_memory(m, n, 16 * GiB, 132)
    cells = gpu.traceback_cells(m, n, plan)
    leaf = plan.intervals[-1]
    if max(m, n) <= leaf * plan.window:
        assert m * n <= cells <= 2 * m * n
    else:
        assert 0 < cells < m * n
        assert cells >= (m // leaf + n // leaf - 1) * leaf * leaf  # every crossed leaf chunk at least


def test_local_end_cells_take_the_best_score_then_the_smallest_row_then_column_per_pair():
    rng = np.random.default_rng(3)
    strips = rng.integers(1, 6, size=200)
    cells = np.column_stack([rng.integers(-2, 4, size=strips.sum()), rng.integers(0, 5, size=strips.sum()),
                             rng.integers(0, 5, size=strips.sum())]).astype(np.int64)
    ends = gpu.local_end_cells(cells, strips)
    at = 0
    for count, end in zip(strips, ends):
        own = [tuple(int(x) for x in row) for row in cells[at:at + count]]
        at += count
        score, i, j = min(own, key=lambda c: (-c[0], c[1], c[2]))
        assert (end.score, end.query_end, end.target_end) == ((score, i, j) if score > 0 else (0, 0, 0))
    assert len(ends) == len(strips) and any(end.score == 0 for end in ends)


@pytest.mark.parametrize("n, slabs", [(4096, 1), (10**7, 2), (10**7 + 1, 3), (9000, 2), (100, 4)])
def test_column_slabs_cover_every_column_once_as_equal_as_possible(n, slabs):
    bounds = gpu.column_slabs(n, n, slabs)
    assert bounds[0] == 0 and bounds[-1] == n and len(bounds) == slabs + 1
    widths = np.diff(bounds)
    assert widths.max() - widths.min() <= 1 and widths.sum() == n


@pytest.mark.parametrize("m, n, slabs", [(10**7, 10**7, 2), (10**7, 10**7, 4), (3 * 10**6, 10**7, 3)])
def test_pruning_split_gives_each_slab_the_same_modelled_work(m, n, slabs):
    # The model: column j keeps min(m / (1 + c), (n - j) / c) rows; summed per column here.
    bounds = gpu.column_slabs(m, n, slabs, pruning=True)
    assert bounds[0] == 0 and bounds[-1] == n and all(np.diff(bounds) >= gpu.MIN_SLAB_COLUMNS)
    c = gpu.SLAB_SPLIT_RATE
    kept = np.minimum(m / (1 + c), (n - np.arange(n, dtype=float)) / c)
    work = [kept[a:b].sum() for a, b in zip(bounds, bounds[1:])]
    assert max(work) / min(work) < 1.001
    if m == n:  # the left slab gets fewer columns: more of its rows survive
        assert bounds[1] < n // slabs


def test_pruning_split_falls_back_to_equal_slabs_when_one_would_be_too_narrow(monkeypatch):
    n = 2 * gpu.MIN_SLAB_COLUMNS + 100
    assert gpu.column_slabs(n, n, 2, pruning=True) == [0, n // 2, n]
    monkeypatch.setattr(gpu, "SLAB_SPLIT_RATE", 0.0)
    assert gpu.column_slabs(10**7, 10**7, 2, pruning=True) == [0, 5 * 10**6, 10**7]


def test_only_slabs_of_min_slab_columns_are_made():
    assert gpu.slab_devices(10**7, [0, 1]) == [0, 1]
    assert gpu.slab_devices(2 * gpu.MIN_SLAB_COLUMNS - 1, [0, 1, 2]) == [0]
    assert gpu.slab_devices(3 * gpu.MIN_SLAB_COLUMNS, [0, 1, 2, 3]) == [0, 1, 2]
    assert gpu.slab_devices(10, [1, 0]) == [1]  # the first device named, however narrow


def test_slab_link_record_matches_the_kernels_struct():
    # struct SlabLink in striped.cu: seven pointers, then int cols_after (64 bytes with padding).
    from gpualign_plugin.runtime.kernels import _source

    text = _source("pairwise/striped.cu")
    body = text[text.index("struct SlabLink {"):text.index("};", text.index("struct SlabLink {"))]
    fields = re.findall(r"^\s+(?:const )?(int\*?) (\w+);", body, flags=re.M)
    assert [name for _, name in fields] == [f for f in gpu._LINK_FIELDS.names if f != "padding"]
    assert [kind == "int*" for kind, _ in fields] == \
        [gpu._LINK_FIELDS[f].itemsize == 8 for f in gpu._LINK_FIELDS.names if f != "padding"]
    assert gpu._LINK_FIELDS.itemsize == 64


def test_scores_outside_int8_are_refused_before_any_gpu_work():
    # The one check behind both the long-pair engine and the many-pairs scorer: an InputError
    # naming the scheme's range, raised before CuPy is needed.
    from gpualign_plugin.scoring import ScoringScheme

    scheme = ScoringScheme.dna(match=200, mismatch=-3)
    codes = scheme.alphabet.encode("ACGT")
    message = r"between -128 and 127 \(match=200,mismatch=-3,ambiguity=-1 has -3\.\.200\)"
    with pytest.raises(InputError, match=message):
        gpu._prepare(codes, codes, scheme, "local")
    with pytest.raises(InputError, match=message):
        gpu.PairScorer([codes], scheme)


@pytest.mark.parametrize("capability", [(8, 0), (8, 9)], ids=["A100", "L40"])
def test_the_packed_sweep_is_chosen_only_with_dpx(monkeypatch, capability):
    # Before Hopper the packed sweep's 16-bit DPX instructions are emulated, and it was never
    # measured there: score_pair keeps the striped sweep. (The device is described, not probed.)
    from gpualign_plugin.runtime.gpu import GpuStatus
    from gpualign_plugin.scoring import ScoringScheme

    monkeypatch.setattr(gpu, "probe", lambda device=0: GpuStatus(True, "", device, "NVIDIA A100", 80 * GiB,
                                                                 capability, 108))
    scheme = ScoringScheme.dna(match=1, mismatch=-3, gap_open=3, gap_extend=2)
    for mode in ("local", "global", "semiglobal"):
        assert gpu.score_kernel(1000, scheme, mode) == "striped"


def test_a_sweep_below_the_polling_size_reports_its_cells_once_it_has_ended():
    # Both sweeps (striped and packed) report progress through gpu._sweep_progress. Below
    # POLL_CELLS no thread watches the flags (the watched case needs a GPU: test_pairwise_gpu.py
    # and test_pairwise_packed.py): all cells are reported after a launch, none after a failed one.
    heard = []
    with gpu._sweep_progress(None, 4, 512, 1000, 120, heard.append, 0):
        assert heard == []
    assert heard == [120_000]
    with pytest.raises(RuntimeError, match="launch failed"):
        with gpu._sweep_progress(None, 4, 512, 1000, 120, heard.append, 0):
            raise RuntimeError("launch failed")
    assert heard == [120_000]
    with gpu._sweep_progress(None, 4, 512, 1000, 120, None, 0):
        pass
