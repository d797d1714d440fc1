"""Checkpointed traceback: exact tracebacks in bounded memory, for any row-by-row DP.

A full-matrix traceback stores one direction byte per cell. For long sequences
that does not fit, so :func:`checkpointed_traceback` recomputes the matrix band
by band (Li's chunked alignment):

1. a forward pass from the band's top state saves the DP state rows at band
   boundaries, over columns ``0..exit_col`` only (the path never moves right);
2. from the bottom band up, each band is solved again from its saved top row,
   with direction bytes when ``rows * width`` fits the budget, or by recursing
   with finer checkpoints when it does not;
3. the traceback walks from the path's exit cell and state in one band into
   the band above, carrying the state (a path that crosses a band boundary
   inside a vertical gap continues in that gap).

Because a traceback rule reads only exact cell values, the path is identical
to the one a single full-matrix band gives; the engines' tests prove it on
thousands of inputs with a tiny budget.

The protocol
------------
The driver knows nothing about the recurrence. It talks to a *problem* object
(the Gotoh one is :class:`gpualign_plugin.pairwise.cpu.GotohProblem`) with:

``direction_bytes_per_cell`` : int
    Bytes of traceback information per cell.
``state_bytes_per_column`` : int
    Bytes of one saved DP state row per column (Gotoh: ``H`` and ``F``, 8).
``initial_state(width) -> state``
    The state of row 0 over columns ``0..width-1`` (any object the problem
    understands; Gotoh uses an ``int32`` array of shape ``(2, width)``).
``forward(r0, top, width, save_rows) -> list of states``
    Starting from ``top`` (the state of row ``r0``, of which only columns
    ``0..width-1`` are read), compute rows ``r0+1 .. save_rows[-1]`` over
    columns ``0..width-1`` and return the states of the rows in ``save_rows``
    (ascending, all ``> r0``). Must not modify ``top``.
``directions(r0, r1, top, width) -> directions``
    Direction information for rows ``r0+1..r1`` over columns ``0..width-1``,
    computed from ``top`` (not modified).
``trace(directions, r0, cursor) -> bool``
    Walk the traceback from ``cursor`` (a :class:`Cursor`, with
    ``r0 < cursor.row``) through the band, appending operations to the
    problem's own path buffer, and update ``cursor`` in place. Return
    ``True`` when the path is complete (the stop rule fired, or row 0 was
    handled), ``False`` when the walk reached row ``r0`` (then ``cursor.row ==
    r0`` and the band above continues).

Memory bound
------------
A band solved with direction bytes holds at most ``memory_budget`` bytes of
them (at least one row, whatever the budget). Each recursion level holds at
most ``memory_budget`` bytes of saved state rows (at least one row), and a
level is added only when one level's checkpoints cannot cut the rows into
bands that fit. Peak is therefore at most ``memory_budget * (1 + levels)``
plus the problem's own buffers, and the work is one forward pass per level
plus one direction pass. With the default 256 MiB and Gotoh's 8 bytes of
state per column: 100 kbp x 100 kbp needs one level (about 0.3 GB: 256 MiB
of direction bytes, 75 saved rows of 0.8 MB); 200 kbp x 200 kbp one level
(about 0.5 GB); 1 Mbp x 1 Mbp three levels (under 1 GB, as the saved rows
of the deeper levels are narrower or fewer).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Cursor:
    """Where the traceback stands: a cell and a state of the recurrence.

    Attributes
    ----------
    row, col : int
        The cell ``(i, j)``.
    state : int
        The problem's state code (Gotoh: 0 H, 1 E, 2 F).
    """

    row: int
    col: int
    state: int


def checkpointed_traceback(problem, end_row: int, end_col: int, end_state: int,
                           memory_budget: int) -> Cursor:
    """Trace the path ending at ``(end_row, end_col)`` in ``end_state`` within ``memory_budget``.

    Parameters
    ----------
    problem
        An object following the protocol in this module's docstring; it collects
        the path's operations.
    end_row, end_col : int
        The end cell of the path (the DP is solved over rows ``0..end_row`` and
        columns ``0..end_col`` only).
    end_state : int
        The state the traceback starts in.
    memory_budget : int
        Bytes allowed for direction information at once (see the memory bound
        in the module docstring). A budget covering ``end_row * (end_col + 1)``
        direction bytes gives the plain full-matrix traceback.

    Returns
    -------
    Cursor
        The cell and state where the path starts (its stop cell).
    """
    cursor = Cursor(end_row, end_col, end_state)
    top = problem.initial_state(end_col + 1)
    _solve(problem, 0, end_row, top, cursor, max(int(memory_budget), 1))
    return cursor


def _solve(problem, r0: int, r1: int, top, cursor: Cursor, budget: int) -> bool:
    """Trace from ``cursor`` (on row ``r1``) up to row ``r0``; True when the path is complete."""
    width = cursor.col + 1
    rows = r1 - r0
    band_rows = max(1, budget // (problem.direction_bytes_per_cell * width))
    if rows <= band_rows:
        return problem.trace(problem.directions(r0, r1, top, width), r0, cursor)
    bands = -(-rows // band_rows)
    max_saved = max(1, budget // (problem.state_bytes_per_column * width))
    if bands - 1 <= max_saved:
        # Every band fits: checkpoint exactly at band boundaries, no further recursion.
        cuts = [r0 + k * band_rows for k in range(1, bands)]
    else:
        segments = max_saved + 1
        cuts = [r0 + (k * rows) // segments for k in range(1, segments)]
    tops = [top] + problem.forward(r0, top, width, cuts)
    starts = [r0] + cuts
    ends = cuts + [r1]
    for k in range(len(starts) - 1, -1, -1):
        if _solve(problem, starts[k], ends[k], tops[k], cursor, budget):
            return True
        tops.pop()
    return False
