"""The GPU engine's host walk over its sweep's direction-byte layout follows the CPU band walk exactly.

Runs without a GPU: the direction bytes come from the CPU kernels and are laid out as the
GPU sweep stores them (``[strip][step][lane][rows]``, four bits a cell, two a byte); both walks
must emit the same path.
"""

import subprocess
import sys

import numpy as np
import pytest

from gpualign_plugin import gotoh as kernels
from gpualign_plugin.pairwise import gpu as gpu
from gpualign_plugin.pairwise import gpu_walk
from gpualign_plugin.pairwise.cpu import score_pair
from gpualign_plugin.scoring import ScoringScheme

MODES = {"local": kernels.LOCAL, "global": kernels.GLOBAL, "semiglobal": kernels.SEMIGLOBAL}


def full_directions(a, b, scheme, mode):
    width = len(b) + 1
    H = np.empty(width, np.int32)
    F = np.empty(width, np.int32)
    kernels.initial_row(width, scheme.gap_open, scheme.gap_extend, mode == kernels.GLOBAL, H, F)
    dirs = np.zeros((len(a), width), np.uint8)
    kernels.band_directions(a, b, scheme.matrix, scheme.gap_open, scheme.gap_extend, mode, 0, width,
                            H, F, dirs)
    return dirs


def sweep_layout(dirs, rows):
    """``dirs[i-1, j]`` rearranged as the GPU sweep writes a chunk at ``r0 = c0 = 0``."""
    m, width = dirs.shape
    strip = 32 * rows
    steps = (width - 1) + 31
    strips = max(1, -(-m // strip))
    layout = np.zeros(strips * steps * 32 * rows // 2, np.uint8)
    for li in range(m):
        k, t, r = li // strip, (li % strip) // rows, li % rows
        for lj in range(width - 1):
            cell = ((k * steps + (lj + t)) * 32 + t) * rows + r
            assert dirs[li, lj + 1] < 16
            layout[cell // 2] |= dirs[li, lj + 1] << (4 * (cell % 2))
    return layout, strip, steps


@pytest.mark.parametrize("mode", sorted(MODES))
def test_layout_walk_equals_band_walk(mode):
    rng = np.random.default_rng(11)
    scheme = ScoringScheme.dna(2, -3, 5, 2)
    for case in range(60):
        unit = rng.integers(0, 4, rng.integers(1, 4)).astype(np.uint8)
        if case % 2:
            a = np.tile(unit, 40)[: rng.integers(1, 90)]
            b = np.tile(unit, 40)[: rng.integers(1, 90)]
        else:
            a = rng.integers(0, 4, rng.integers(1, 90)).astype(np.uint8)
            b = rng.integers(0, 4, rng.integers(1, 90)).astype(np.uint8)
        code = MODES[mode]
        end = score_pair(a, b, scheme, mode)
        if mode == "local" and end.score <= 0:
            continue
        dirs = full_directions(a, b, scheme, code)
        layout, strip, steps = sweep_layout(dirs, gpu.CHUNK_ROWS_PER_LANE)
        cpu_ops = np.zeros(len(a) + len(b) + 2, np.uint8)
        gpu_ops = np.zeros_like(cpu_ops)
        expected = kernels.trace_band(dirs, 0, a, b, code, end.query_end, end.target_end,
                                      kernels.STATE_H, cpu_ops, 0)
        walked = gpu_walk.trace_chunk(layout, strip, gpu.CHUNK_ROWS_PER_LANE, steps, 0, 0, a, b, code,
                                      end.query_end, end.target_end, kernels.STATE_H, gpu_ops, 0)
        assert walked == expected
        assert np.array_equal(gpu_ops[: walked[3]], cpu_ops[: expected[3]])


def test_background_warm_up_compiles_the_walk_for_the_types_the_traceback_passes():
    # gpu.warm_walk loads the walk while the GPU scores; it must compile the very signature the
    # traceback then uses (a slice of a pinned buffer of direction bytes, uint8 sequences and path,
    # Python ints), or the first traceback would compile again.
    import numba

    gpu.warm_walk().join()
    pinned_like = np.frombuffer(bytearray(64), dtype=np.uint8)  # as kernels.pinned_bytes makes it
    a = np.array([0, 1, 2, 3], np.uint8)
    ops = np.empty(8, dtype=np.uint8)
    traceback_args = (pinned_like[:32], 64, gpu.CHUNK_ROWS_PER_LANE, 4 + 31, 0, 0, a, a,
                      MODES["local"], 4, 4, kernels.STATE_H, ops, 0)
    assert [numba.typeof(x) for x in gpu.warm_walk_args()] == [numba.typeof(x) for x in traceback_args]
    assert len(gpu_walk.trace_chunk.signatures) >= 1


def test_a_gpu_alignment_reaches_the_device_without_numba():
    # Numba (and SciPy's BLAS behind it) costs about 0.4 s to import on the GPU machines; the
    # long-pair engine needs it only for the walk after the score pass, which warm_walk loads
    # on a background thread meanwhile. The modules `gpualign pairwise` takes to the device
    # must not import it.
    code = ("import sys; import gpualign_plugin.cli.pairwise, gpualign_plugin.pairwise.gpu, "
            "gpualign_plugin.pairwise.placement, gpualign_plugin.io.fasta; print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def gotoh_states(a, b, scheme):
    """Local ``H``, ``E`` (gap along a row: target letters, ``D``) and ``F`` (``I``) of every cell."""
    m, n, o, e = len(a), len(b), scheme.gap_open, scheme.gap_extend
    neg = -(10 ** 9)
    H = np.zeros((m + 1, n + 1), np.int64)
    E = np.full((m + 1, n + 1), neg, np.int64)
    F = np.full((m + 1, n + 1), neg, np.int64)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i, j] = max(E[i, j - 1] - e, H[i, j - 1] - o - e)
            F[i, j] = max(F[i - 1, j] - e, H[i - 1, j] - o - e)
            H[i, j] = max(0, H[i - 1, j - 1] + scheme.matrix[a[i - 1], b[j - 1]], E[i, j], F[i, j])
    return H, E, F


def test_the_traced_score_bounds_the_value_a_region_sweep_must_reach():
    """:class:`gpu._TracedScore` (goal pruning of the traceback's region sweeps), fed the walked
    path in pieces of random length, against the DP: its goal never exceeds the value, in the
    walk's state, of the cell reached, and equals it inside a gap (else it is one open lower)."""
    rng = np.random.default_rng(5)
    scheme = ScoringScheme.dna(2, -3, 5, 2)
    d, i_op = gpu.RUN_OPS.index("D"), gpu.RUN_OPS.index("I")
    checked = 0
    for _ in range(40):
        a = rng.integers(0, 4, rng.integers(20, 70)).astype(np.uint8)
        b = a.copy()
        b[rng.random(len(b)) < 0.1] = rng.integers(0, 4)
        b = np.delete(b, rng.integers(0, len(b), 2))
        b = np.insert(b, rng.integers(0, len(b), 2), rng.integers(0, 4, 2).astype(np.uint8))
        end = score_pair(a, b, scheme, "local")
        H, E, F = gotoh_states(a, b, scheme)
        ops = np.zeros(len(a) + len(b) + 2, np.uint8)
        walked = kernels.trace_band(full_directions(a, b, scheme, kernels.LOCAL), 0, a, b, kernels.LOCAL,
                                    end.query_end, end.target_end, kernels.STATE_H, ops, 0)
        traced = gpu._TracedScore(a, b, scheme, end.score, end.query_end, end.target_end)
        i, j, pos = end.query_end, end.target_end, 0
        while pos < walked[3]:
            step = min(int(rng.integers(1, 6)), walked[3] - pos)
            for code in ops[pos:pos + step]:
                i -= code != d
                j -= code != i_op
            pos += step
            goal = traced.goal(ops, pos)
            inside_gap = pos < walked[3] and ops[pos] == ops[pos - 1] and ops[pos] in (d, i_op)
            if inside_gap:
                assert goal == (E if ops[pos] == d else F)[i, j]
            else:
                assert goal == H[i, j] - scheme.gap_open
            checked += 1
    assert checked > 300
