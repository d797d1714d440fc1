"""One pair split by columns over devices (``devices=``): the same score, end cell and CIGAR as
one sweep over the whole matrix and as the CPU engine.

Every test needs a GPU (marker ``gpu``). On one GPU the slabs run one after the other on the
same device (a device named twice), through the same streamed edges and ready flags as on several
devices; the tests for two GPUs run the slabs at once and skip
cleanly on a machine with one. Slabs are allowed down to 64 columns here so that small pairs
cross several of them, with checkpoints every 64 rows and columns so that paths cross many
chunks on both sides of every slab boundary.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_pairwise_cpu import SCHEMES, check_alignment, random_case
from test_pairwise_gpu import BENCH_SCHEME, copy_then_unrelated

from gpualign_plugin.cli.bench import related_pair
from gpualign_plugin.pairwise import cpu
from gpualign_plugin.pairwise.modes import MODES

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def narrow_slabs(monkeypatch):
    from gpualign_plugin.pairwise import gpu

    monkeypatch.setattr(gpu, "MIN_SLAB_COLUMNS", 64)
    return gpu


def two_gpus() -> list:
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    return [0, 1]


def assert_split_same(gpu, q, t, scheme, mode, devices, every=64):
    """Score and alignment on ``devices`` equal the CPU engine's; returns the alignment's profile."""
    assert gpu.score_pair(q, t, scheme, mode, devices=devices) == cpu.score_pair(q, t, scheme, mode)
    profile: dict = {}
    got = gpu.align_pair(q, t, scheme, mode, devices=devices, checkpoint_every=every, profile=profile)
    expected = cpu.align_pair(q, t, scheme, mode)
    assert got == expected, (str(got.cigar), str(expected.cigar))
    if got.score or mode != "local":
        check_alignment(got, q, t, scheme, mode)
    return profile


@pytest.mark.parametrize("mode", MODES)
def test_random_pairs_in_two_and_three_slabs_on_one_device_equal_cpu(mode, narrow_slabs):
    rng = np.random.default_rng(900 + MODES.index(mode))
    split = 0
    for case in range(60):
        scheme, q, t = random_case(rng, 700, tie_heavy=case % 3 == 0)
        devices = [0, 0] if case % 2 else [0, 0, 0]
        profile = assert_split_same(narrow_slabs, q, t, scheme, mode, devices)
        split += profile.get("slabs", 1) > 1
    assert split > 20  # most cases are wide enough to be split


@pytest.mark.parametrize("mode", MODES)
def test_paths_that_cross_slab_edges_in_every_state(mode, narrow_slabs):
    # A gap spanning a slab boundary (E state carried across), a path along row 0 or column 0 in
    # the end-to-end modes, and deeper checkpoint levels inside the second slab.
    rng = np.random.default_rng(31)
    for scheme in (SCHEMES[0], SCHEMES[4], SCHEMES[6]):
        letters = 4 if scheme.is_dna else 20
        t = rng.integers(0, letters, 900, dtype=np.uint8)
        q = np.concatenate([t[:400], t[520:900]])  # a 120-column deletion around column 450
        assert_split_same(narrow_slabs, q, t, scheme, mode, [0, 0])
        assert_split_same(narrow_slabs, t, q, scheme, mode, [0, 0, 0])
        short = t[700:760].copy()
        assert_split_same(narrow_slabs, short, t, scheme, mode, [0, 0])
        got = narrow_slabs.align_pair(q, t, scheme, mode, devices=[0, 0], intervals=(256, 64))
        assert got == cpu.align_pair(q, t, scheme, mode)


def test_pruning_in_every_slab_changes_nothing_and_uses_the_best_of_the_slabs_on_the_left(narrow_slabs):
    # The whole alignment lies in the first slab (the query copies the target's first 3 kbp), so
    # the slabs on the right find no high score of their own: the cells they skip are those that
    # cannot reach the best score streamed from the left with each strip (rows below about 500).
    rng = np.random.default_rng(44)
    target = rng.integers(0, 4, 30_000, dtype=np.uint8)
    query = copy_then_unrelated(rng, BENCH_SCHEME, target, 0, 3_000, 500, 0)
    counts: dict = {}
    score = narrow_slabs._score(query, target, BENCH_SCHEME, "local", 0, profile=counts, devices=[0, 0, 0])
    assert score == cpu.score_pair(query, target, BENCH_SCHEME, "local") == \
        narrow_slabs._score(query, target, BENCH_SCHEME, "local", 0, prune=False, devices=[0, 0, 0])
    bounds = counts["slab_bounds"]
    assert counts["slabs"] == 3 and score.target_end < bounds[1]
    for d in (1, 2):
        assert counts["slab_pruned_cells"][d] > 0.3 * len(query) * (bounds[d + 1] - bounds[d])
    assert narrow_slabs.align_pair(query, target, BENCH_SCHEME, "local", devices=[0, 0, 0],
                                   checkpoint_every=64) == cpu.align_pair(query, target, BENCH_SCHEME, "local")


def test_narrow_targets_stay_on_one_slab(narrow_slabs):
    rng = np.random.default_rng(5)
    t = rng.integers(0, 4, 100, dtype=np.uint8)
    q = rng.integers(0, 4, 300, dtype=np.uint8)
    profile: dict = {}
    narrow_slabs.align_pair(q, t, BENCH_SCHEME, "local", devices=[0, 0, 0], profile=profile)
    assert profile["slabs"] == 1  # 100 columns give one slab of at least 64


@pytest.mark.parametrize("mode", MODES)
def test_two_gpus_at_once_equal_one_gpu_and_cpu(mode, narrow_slabs):
    devices = two_gpus()
    rng = np.random.default_rng(77 + MODES.index(mode))
    for case in range(30):
        scheme, q, t = random_case(rng, 700, tie_heavy=case % 3 == 0)
        assert_split_same(narrow_slabs, q, t, scheme, mode, devices)


def test_two_gpus_on_a_100kbp_related_pair(narrow_slabs):
    devices = two_gpus()
    q, t = related_pair(100_000, 100_000, 0.02, 7)
    one = narrow_slabs.align_pair(q, t, BENCH_SCHEME, "local")
    profile: dict = {}
    two = narrow_slabs.align_pair(q, t, BENCH_SCHEME, "local", devices=devices, profile=profile)
    assert two == one and profile["slabs"] == 2
    assert narrow_slabs.score_pair(q, t, BENCH_SCHEME, "global", devices=devices) == \
        narrow_slabs.score_pair(q, t, BENCH_SCHEME, "global")
