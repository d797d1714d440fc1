"""The GPU engine's host walk over its sweep's direction-byte layout follows the CPU band walk exactly.

Runs without a GPU: the direction bytes come from the CPU kernels and are laid out as the
GPU sweep stores them (``[strip][step][lane][rows]``); both walks must emit the same path.
"""

import numpy as np
import pytest

from gpualign_plugin import gotoh as kernels
from gpualign_plugin.pairwise import gpu as gpu
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
    layout = np.zeros(strips * steps * 32 * rows, np.uint8)
    for li in range(m):
        k, t, r = li // strip, (li % strip) // rows, li % rows
        for lj in range(width - 1):
            layout[((k * steps + (lj + t)) * 32 + t) * rows + r] = dirs[li, lj + 1]
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
        walked = gpu._trace_chunk(layout, strip, gpu.CHUNK_ROWS_PER_LANE, steps, 0, 0, a, b, code,
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
    assert [numba.typeof(x) for x in gpu._warm_walk_args()] == [numba.typeof(x) for x in traceback_args]
    assert len(gpu._trace_chunk.signatures) >= 1
