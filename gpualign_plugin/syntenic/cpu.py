"""The syntenic recurrence on the CPU: the checkpoint problem the traceback drives, and the score sweep.

The Numba fill and walk are in :mod:`~gpualign_plugin.syntenic.cpu_kernels`;
docs/ALGORITHMS.md ("Syntenic") gives the recurrence. The GPU engine
(:mod:`~gpualign_plugin.syntenic.gpu`) subclasses :class:`SyntenicProblem` and
replaces only its fill.
"""

from __future__ import annotations

import numpy as np

from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.syntenic import cpu_kernels as kernels
from gpualign_plugin.traceback.checkpoint import Cursor


def sweep_score(q: np.ndarray, t: np.ndarray, matrix: np.ndarray, scheme: ScoringScheme,
                block_penalty: int) -> int:
    """``S(m, n)``, the optimal syntenic score, in one row sweep (``q`` on the rows, O(n) memory)."""
    S, I, H = kernels.new_row(len(t) + 1)
    kernels.fill_rows(q, t, matrix, scheme.gap_open, scheme.gap_extend, block_penalty, 0, len(q),
                      len(t) + 1, S, I, H, kernels.NO_FLAGS)
    return int(S[len(t)])


class SyntenicProblem:
    """The syntenic recurrence as a :mod:`~gpualign_plugin.traceback.checkpoint` problem.

    A row state is an ``int32`` array of shape ``(3, width)``: ``S``, ``I`` and
    ``H``. Moves collect in :attr:`moves` (end to start) up to :attr:`length`;
    :attr:`score` is ``S(m, n)``, taken from the band that computes row ``m``.
    """

    direction_bytes_per_cell = 1
    state_bytes_per_column = 12

    def __init__(self, query, target, matrix, scheme: ScoringScheme, block_penalty: int,
                 progress=None):
        self.query = query
        self.target = target
        self.matrix = matrix
        self.gap_open = scheme.gap_open
        self.gap_extend = scheme.gap_extend
        self.block_penalty = block_penalty
        self.moves = np.empty(len(query) + len(target), dtype=np.uint8)
        self.length = 0
        self.score: int | None = None
        self.progress = progress

    def _fill(self, first: int, last: int, state: np.ndarray, width: int, flags) -> None:
        kernels.fill_rows(self.query, self.target, self.matrix, self.gap_open, self.gap_extend,
                          self.block_penalty, first, last, width, state[0], state[1], state[2],
                          flags)
        self._count((last - first + 1) * width)

    def _count(self, cells: int) -> None:
        """Report ``cells`` computed DP cells to the progress callback, if any."""
        if self.progress is not None:
            self.progress(cells)

    def _keep_score(self, r1: int, width: int, last_row: np.ndarray) -> None:
        """Record ``S(m, n)`` when the band just solved ends at row ``m`` over every column."""
        if r1 == len(self.query) and width == len(self.target) + 1:
            self.score = int(last_row[0, width - 1])

    def initial_state(self, width: int) -> np.ndarray:
        """Row 0: ``S``, ``I`` and ``H`` over columns ``0..width-1``."""
        state = np.empty((3, width), dtype=np.int32)
        self._fill(0, 0, state, width, kernels.NO_FLAGS)
        return state

    def forward(self, r0: int, top: np.ndarray, width: int, save_rows) -> list:
        """States of the rows in ``save_rows``, computed from ``top`` (row ``r0``)."""
        state = top[:, :width].copy()
        saved = []
        row = r0
        for target_row in save_rows:
            self._fill(row + 1, target_row, state, width, kernels.NO_FLAGS)
            saved.append(state.copy())
            row = target_row
        return saved

    def directions(self, r0: int, r1: int, top: np.ndarray, width: int) -> np.ndarray:
        """Direction bytes of rows ``r0+1..r1`` over columns ``0..width-1``."""
        state = top[:, :width].copy()
        flags = np.empty((r1 - r0, width), dtype=np.uint8)
        self._fill(r0 + 1, r1, state, width, flags)
        self._keep_score(r1, width, state)
        return flags

    def trace(self, flags: np.ndarray, r0: int, cursor: Cursor) -> bool:
        """Walk the band; see the protocol in :mod:`~gpualign_plugin.traceback.checkpoint`."""
        i, j, state, self.length = kernels.trace(flags, r0 + 1, cursor.row, cursor.col,
                                                 cursor.state, self.moves, self.length)
        if i == r0 and r0 == 0:
            # Row 0 has no band of its own: its direction bytes are cheap to compute here.
            row0 = np.empty((1, j + 1), dtype=np.uint8)
            kernels.fill_rows(self.query, self.target, self.matrix, self.gap_open,
                              self.gap_extend, self.block_penalty, 0, 0, j + 1,
                              *kernels.new_row(j + 1), row0)
            i, j, state, self.length = kernels.trace(row0, 0, i, j, state, self.moves,
                                                     self.length)
        cursor.row, cursor.col, cursor.state = int(i), int(j), int(state)
        return i == 0 and j == 0 and state == kernels.STATE_S
