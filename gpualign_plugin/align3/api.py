"""Optimal global alignment of three sequences under a sum-of-pairs score (Gotoh 1986).

The score of an alignment is the sum, over its columns, of the scores of the three
pairs of residues in the column: ``s(x, y)`` from the substitution matrix for two
residues, ``-g`` for a residue against a gap, ``0`` for a gap against a gap. It equals
the sum of the scores of the three pairwise projections (drop the columns where both
rows are gaps) under the linear gap cost ``g`` per gap residue.

The DP value ``D(i, j, k)`` (the best score of aligning ``a[:i]``, ``b[:j]``, ``c[:k]``)
takes the best of seven moves; docs/ALGORITHMS.md ("Three-sequence alignment") gives the
recurrence, the boundaries and the tie-breaking order, which every engine follows.

Evaluation order: plane ``i`` (the rows ``(i, j, 0..n)`` for every ``j``) depends only on
plane ``i - 1`` and on itself, so one plane of scores suffices for the score. The
``(i, j)`` rows are swept in square tiles along anti-diagonals of tiles; the tiles of
one anti-diagonal are independent and run in parallel (few synchronisations, each tile
small enough for the cache). The alignment is recovered by checkpointed recomputation:
the forward sweep keeps the last plane before every slab of planes; the traceback
recomputes one slab at a time with one direction byte per cell, within
``memory_budget``. Both give exactly the full-matrix path: a cell's move depends only on
exact values. With ``backend='gpu'`` the plane sweep runs on a GPU instead
(:mod:`gpualign_plugin.align3.gpu`, sloped planes), writing the same direction bytes;
the CPU's plane sweep is :mod:`gpualign_plugin.align3.cpu`. This module is the entry point.

References
----------
Gotoh O. (1986) Alignment of three biological sequences with an efficient traceback
procedure. J. Theor. Biol. 121:327-337.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gpualign_plugin.align3 import cpu
from gpualign_plugin.errors import InputError
from gpualign_plugin.model import MultipleAlignment
from gpualign_plugin.scoring import (NEG_INF, ScoringScheme, Sequence, reverse_complement_codes,
                                     reverse_complement_text)

MOVES = np.array([(1, 1, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1)],
                 dtype=np.int64)
"""The seven moves ``(di, dj, dk)`` in tie-breaking order: the first that attains the maximum wins."""

DEFAULT_MEMORY_BUDGET = 1 << 30
"""Bytes that :func:`align3` may use for scores, checkpoints and direction bytes (1 GiB)."""


@dataclass(frozen=True)
class Region:
    """A stretch of a source sequence to align, on either strand.

    Attributes
    ----------
    sequence : Sequence
        The whole source record.
    start, end : int
        0-based half-open interval on the forward strand; ``end=None`` means the record's end.
    strand : str
        ``'+'``, or ``'-'`` to align the reverse complement of the interval (DNA only).
    source : str, optional
        MAF ``src`` name; defaults to the record id.
    """

    sequence: Sequence
    start: int = 0
    end: int | None = None
    strand: str = "+"
    source: str | None = None


def default_linear_gap(scheme: ScoringScheme) -> int:
    """The default linear gap cost ``g`` for ``scheme``: an affine gap's mean cost per column.

    ``g`` is the cost per column of a gap of length 1, 2 and 3 under the scheme's affine
    costs, averaged and rounded half up:
    ``round(open * (1 + 1/2 + 1/3) / 3 + extend) = round(11/18 * open + extend)``.
    Short gaps are by far the most frequent, so a linear cost near their per-column cost
    keeps a linear-gap alignment close to the affine one. With the defaults this gives 8
    for BLOSUM62 (open 11, extend 1: 12, 6.5 and 4.7 per column) and 5 for DNA 2/-3
    (open 5, extend 2: 7, 4.5 and 3.7 per column).

    Returns
    -------
    int
        The cost of one residue against a gap, a positive score unit.
    """
    return (11 * scheme.gap_open + 18 * scheme.gap_extend + 9) // 18


# ---------------------------------------------------------------------------------------------
# Numba kernels


# ---------------------------------------------------------------------------------------------
# Drivers


def _check(scheme: ScoringScheme, gap: int, lengths: tuple[int, int, int]) -> None:
    if int(gap) != gap or gap < 0:
        raise InputError(f"--gap must be an integer 0 or more (a cost per gap residue), got {gap}")
    if min(lengths) < 1:
        raise InputError("align3 needs three non-empty sequences")
    worst = max(int(np.abs(scheme.matrix).max()), int(gap))
    if 3 * sum(lengths) * worst >= -NEG_INF // 2:
        raise InputError(f"sequences of {lengths[0]}, {lengths[1]} and {lengths[2]} residues could "
                         "overflow 32-bit scores with this scoring scheme")


def _sweeper(codes, scheme: ScoringScheme, gap: int, backend: str, device: int):
    """The DP fill of ``backend`` for one triple: ``sweep(plane, first, last, dirs=None, progress=None)``.

    ``'cpu'`` is :func:`gpualign_plugin.align3.cpu.sweep`; ``'gpu'`` is :class:`gpualign_plugin.align3.gpu.PlaneSweep`
    on CUDA device ``device``. Both write the same scores and direction bytes.
    """
    if backend == "gpu":
        from gpualign_plugin.align3.gpu import PlaneSweep

        return PlaneSweep(codes, scheme, gap, device)
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")

    def sweep(plane, first, last, dirs=None, progress=None):
        cpu.sweep(plane, codes, scheme, gap, first, last, dirs=dirs, progress=progress)

    return sweep


def memory_needed(lengths: tuple[int, int, int], height: int) -> int:
    """Bytes :func:`align3` uses for sequences of ``lengths`` with slabs of ``height`` planes.

    Counts the score plane, the direction bytes of one slab, the checkpoint planes and
    the kernel's per-band buffers (the sequences and the result are not counted).
    """
    l, m, n = lengths
    plane = (m + 1) * (n + 1)
    band_buffers = 4 * (cpu.BAND + 5 * math.ceil(cpu.BAND / cpu.TILE)) * (n + 1)
    # One checkpoint plane per slab but the first (starts from nothing) and the last
    # (its direction bytes come from the forward sweep).
    slabs = math.ceil((l + 1) / height)
    return 4 * plane + band_buffers + height * plane + max(0, slabs - 2) * 4 * plane


def _plan_slabs(lengths: tuple[int, int, int], memory_budget: int) -> int:
    """Slab height in planes: all planes if the whole direction cube fits, else the largest that does."""
    l = lengths[0]
    for height in range(l + 1, 0, -1):
        if memory_needed(lengths, height) <= memory_budget:
            return height
    least = min(memory_needed(lengths, height) for height in range(1, l + 2))
    raise InputError(f"aligning sequences of {lengths[0]}, {lengths[1]} and {lengths[2]} residues "
                     f"needs at least {least:,} bytes; the memory budget (--memory-budget) is "
                     f"{memory_budget:,} bytes")


def _codes_of(item, scheme: ScoringScheme) -> tuple[np.ndarray, Region]:
    region = item if isinstance(item, Region) else Region(item)
    seq = region.sequence
    end = len(seq) if region.end is None else region.end
    if not 0 <= region.start <= end <= len(seq):
        raise InputError(f"region {region.start}-{end} lies outside the sequence "
                         f"({len(seq)} residues)", record=seq.id)
    if region.strand not in "+-" or len(region.strand) != 1:
        raise InputError(f"strand must be '+' or '-', got {region.strand!r}", record=seq.id)
    codes = np.ascontiguousarray(seq.codes[region.start:end], dtype=np.uint8)
    if region.strand == "-":
        if not scheme.is_dna:
            raise InputError("only DNA can be aligned on the minus strand", record=seq.id)
        codes = reverse_complement_codes(codes)
    return codes, Region(seq, region.start, end, region.strand, region.source or seq.id)


def align3_score(a, b, c, scheme: ScoringScheme, gap: int, backend: str = "cpu",
                 device: int = 0) -> int:
    """Optimal sum-of-pairs score of a global alignment of three sequences.

    Uses ``(len(b) + 1)(len(c) + 1)`` 32-bit integers of memory (one plane).

    Parameters
    ----------
    a, b, c : Sequence, Region or numpy.ndarray
        The sequences (``uint8`` codes in ``scheme``'s alphabet for arrays).
    scheme : ScoringScheme
        Substitution scores (its affine gap costs are not used).
    gap : int
        Linear gap cost: each residue against a gap scores ``-gap``; a gap against a gap 0.
    backend : str
        ``'cpu'`` (Numba) or ``'gpu'`` (CuPy; see :mod:`gpualign_plugin.align3.gpu`); resolve
        ``'auto'`` first with :func:`gpualign_plugin.runtime.backend.resolve_backend`.
    device : int
        CUDA device ordinal for ``backend='gpu'``.

    Returns
    -------
    int
        The score (see the module docstring).
    """
    codes = tuple(np.ascontiguousarray(x, dtype=np.uint8) if isinstance(x, np.ndarray)
                  else _codes_of(x, scheme)[0] for x in (a, b, c))
    lengths = tuple(x.size for x in codes)
    _check(scheme, gap, lengths)
    l, m, n = lengths
    plane = np.empty((m + 1, n + 1), dtype=np.int32)
    _sweeper(codes, scheme, gap, backend, device)(plane, 0, l)
    return int(plane[m, n])


def align3(a, b, c, scheme: ScoringScheme, gap: int,
           memory_budget: int = DEFAULT_MEMORY_BUDGET, name: str = "",
           progress: Callable[[int], None] | None = None, backend: str = "cpu",
           device: int = 0) -> MultipleAlignment:
    """Optimal global alignment of three sequences under the sum-of-pairs score.

    The path is the one the written tie-breaking order selects (docs/ALGORITHMS.md), whether
    the direction bytes of the whole cube fit in ``memory_budget`` or the traceback
    recomputes slabs from checkpoints: both give the same alignment, on either backend
    (only the DP fill runs on the GPU; the slab plan, checkpoints and traceback are shared).

    Parameters
    ----------
    a, b, c : Sequence or Region
        The three sequences; a :class:`Region` aligns part of a record, or its reverse
        complement with ``strand='-'``.
    scheme : ScoringScheme
        Substitution scores (its affine gap costs are not used).
    gap : int
        Linear gap cost per residue against a gap (see :func:`default_linear_gap`).
    memory_budget : int
        Bytes of host memory for scores, checkpoints and direction bytes; :class:`InputError`
        if even the smallest plan needs more. The GPU holds one slab of direction bytes too.
    name : str
        Stored on the result (the triplet's name).
    progress : callable, optional
        Called with the number of cells of each band of planes of the forward sweep as it
        is done (the traceback's recomputation is not counted).
    backend : str
        ``'cpu'`` or ``'gpu'`` (see :func:`align3_score`).
    device : int
        CUDA device ordinal for ``backend='gpu'``.

    Returns
    -------
    MultipleAlignment
        Three rows in the order given, with the score.

    Raises
    ------
    GpuMemoryError
        With ``backend='gpu'``: one slab does not fit in free GPU memory (lower
        ``memory_budget`` for thinner slabs).

    Examples
    --------
    >>> from gpualign_plugin.scoring import ScoringScheme
    >>> dna = ScoringScheme.dna()
    >>> trio = [dna.encode(name, text) for name, text in (("a", "ACGT"), ("b", "AGT"), ("c", "ACT"))]
    >>> result = align3(*trio, dna, gap=4)
    >>> result.rows, result.score
    (('ACGT', 'A-GT', 'A-CT'), 0)
    """
    parts = [_codes_of(x, scheme) for x in (a, b, c)]
    codes = tuple(p[0] for p in parts)
    regions = [p[1] for p in parts]
    lengths = tuple(x.size for x in codes)
    _check(scheme, gap, lengths)
    l, m, n = lengths
    height = _plan_slabs(lengths, memory_budget)
    sweep = _sweeper(codes, scheme, gap, backend, device)
    starts = list(range(0, l + 1, height))
    plane = np.empty((m + 1, n + 1), dtype=np.int32)
    dirs = np.empty((height, m + 1, n + 1), dtype=np.uint8)
    checkpoints = {}
    for first in starts:
        last = min(l, first + height - 1)
        if first == starts[-1]:
            sweep(plane, first, last, dirs=dirs, progress=progress)
        else:
            sweep(plane, first, last, progress=progress)
            if last + 1 != starts[-1]:
                checkpoints[last + 1] = plane.copy()
    score = int(plane[m, n])

    moves = np.empty(l + m + n, dtype=np.int8)
    count, i, j, k = cpu.trace_slab(dirs, starts[-1], l, m, n, moves, 0)
    for first in reversed(starts[:-1]):
        if first > 0:
            plane[:] = checkpoints.pop(first)
        sweep(plane, first, first + height - 1, dirs=dirs)
        count, i, j, k = cpu.trace_slab(dirs, first, i, j, k, moves, count)
    steps = MOVES[moves[:count][::-1]]
    rows = tuple(_gapped_row(region, steps[:, r]) for r, region in enumerate(regions))
    return MultipleAlignment(
        ids=tuple(r.sequence.id for r in regions), sources=tuple(r.source for r in regions),
        rows=rows, score=score, starts=tuple(r.start for r in regions),
        ends=tuple(r.end for r in regions), strands=tuple(r.strand for r in regions),
        source_lengths=tuple(len(r.sequence) for r in regions), name=name)


def _gapped_row(region: Region, consumes: np.ndarray) -> str:
    text = region.sequence.text[region.start:region.end]
    if region.strand == "-":
        text = reverse_complement_text(text)
    residues = np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    row = np.full(consumes.size, ord("-"), dtype=np.uint8)
    row[consumes == 1] = residues
    return row.tobytes().decode("latin-1")
