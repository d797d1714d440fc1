"""Syntenic alignment: Huang & Chao's generalized global alignment with difference blocks: the entry point.

A syntenic alignment aligns two sequences end to end but may leave regions
unaligned: a *difference block* skips any number of residues on both sequences
(one side may be empty) at a fixed cost, the block penalty ``d``. The result is
the ordered list of matching regions (aligned with affine gaps) and difference
blocks. The recurrences, boundaries and traceback priority are those of
docs/ALGORITHMS.md ("Syntenic"); the full-matrix and checkpointed tracebacks
return the same path. The fill runs on the CPU
(:mod:`~gpualign_plugin.syntenic.cpu`) or the GPU (:mod:`~gpualign_plugin.syntenic.gpu`);
this module chooses, and the traceback walk is shared.

Conventions: ``uint8`` code arrays of the scheme's alphabet; the query indexes
rows (``i``, length ``m``), the target columns (``j``, length ``n``);
coordinates 0-based half-open; a gap of length ``k`` costs ``open + k*extend``.
:func:`syntenic` also aligns a DNA query's reverse complement (``strand='-'``) and reports
it on the query's forward strand, as pairwise alignments are reported.

Example
-------
>>> from gpualign_plugin.scoring import ScoringScheme
>>> scheme = ScoringScheme.dna()
>>> q = scheme.alphabet.encode("ACGTACGTACGTTTTTTTTTTTTTTTGGCCAAGGCCAA")
>>> t = scheme.alphabet.encode("ACGTACGTACGTCCCCCCCCCCCCCCGGCCAAGGCCAA")
>>> result = syntenic_align(q, t, scheme, block_penalty=10)
>>> [(b.kind, b.query_start, b.query_end, str(b.cigar)) for b in result.blocks]
[('match', 0, 12, '12='), ('difference', 12, 26, '*'), ('match', 26, 38, '12=')]
>>> result.score
38
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Cigar, SyntenicAlignment, SyntenicBlock, score_cigar
from gpualign_plugin.scoring import NEG_INF, ScoringScheme, Sequence, reverse_complement_codes
from gpualign_plugin.syntenic import cpu
from gpualign_plugin.syntenic import cpu_kernels as kernels
from gpualign_plugin.traceback.checkpoint import Cursor, checkpointed_traceback

DEFAULT_MEMORY_BUDGET = 256 * 2**20
DNA_BLOCK_PENALTY = 50
"""Default block penalty for DNA with the default scores (match 2, mismatch -3, gaps 5 + 2k).

A gap longer than 22 bp costs more than a block, and an unrelated stretch
scores about -1 per column or worse, so unrelated regions of a few dozen bp
and longer become difference blocks, while a conserved region must score more
than 50 (about 25 identical bp) to be worth aligning on its own."""

PROTEIN_BLOCK_PENALTY = 60
"""Default block penalty for protein with BLOSUM62 and gaps 11 + k (a 49-residue gap costs 60)."""


def default_block_penalty(scheme: ScoringScheme) -> int:
    """The default block penalty for ``scheme``'s alphabet.

    :data:`DNA_BLOCK_PENALTY` for DNA, :data:`PROTEIN_BLOCK_PENALTY` for protein.
    """
    return DNA_BLOCK_PENALTY if scheme.is_dna else PROTEIN_BLOCK_PENALTY


def _prepare(query_codes, target_codes, scheme: ScoringScheme, block_penalty: int):
    if int(block_penalty) != block_penalty or block_penalty < 1:
        raise InputError(f"the block penalty must be a positive integer, got {block_penalty}")
    q = np.ascontiguousarray(query_codes, dtype=np.uint8)
    t = np.ascontiguousarray(target_codes, dtype=np.uint8)
    scheme.check_score_range(len(q), len(t))
    # Every cell but (0, 0) is at least -block_penalty - (bound), so this keeps int32 exact.
    if scheme.score_bound(len(q), len(t)) + block_penalty >= -NEG_INF // 2:
        raise InputError(f"block penalty {block_penalty} is too large for 32-bit scores")
    return q, t, np.ascontiguousarray(scheme.matrix, dtype=np.int32), int(block_penalty)


def _check_backend(backend: str) -> None:
    if backend not in ("cpu", "gpu"):
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")


def syntenic_score(query_codes, target_codes, scheme: ScoringScheme, block_penalty: int,
                   backend: str = "cpu", device: int = 0) -> int:
    """Optimal syntenic alignment score in O(min(m, n)) memory (GPU: O(m + n)).

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (length ``m``) and target (length ``n``).
    scheme : ScoringScheme
        Substitution matrix and gap costs (a gap of ``k`` costs ``open + k*extend``).
    block_penalty : int
        Cost ``d`` (positive) of one difference block.
    backend : str
        ``'cpu'`` (Numba) or ``'gpu'`` (:mod:`gpualign_plugin.syntenic.gpu`), an
        already resolved backend (see :func:`gpualign_plugin.runtime.backend.resolve_backend`).
    device : int
        CUDA device ordinal for the GPU backend.

    Returns
    -------
    int
        ``S(m, n)`` of docs/ALGORITHMS.md ("Syntenic"), the same on both backends.
        This is the function ``gpualign bench`` times; it computes ``m * n`` cells.

    Raises
    ------
    InputError
        A block penalty below 1, or scores that could overflow 32-bit integers.
    GpuMemoryError
        GPU backend: the sequences and one row and column of state do not fit.
    """
    _check_backend(backend)
    q, t, matrix, d = _prepare(query_codes, target_codes, scheme, block_penalty)
    # The recurrence is symmetric under transposition (I and D cost alike), so the
    # rows run over the longer sequence and the row buffers hold the shorter one.
    if len(t) > len(q):
        q, t, matrix = t, q, np.ascontiguousarray(matrix.T)
    if backend == "gpu" and len(q) > 0:
        from gpualign_plugin.syntenic.gpu import sweep_score

        return sweep_score(q, t, matrix, scheme, d, device)
    return cpu.sweep_score(q, t, matrix, scheme, d)


def _blocks(moves: np.ndarray, query, target, scheme: ScoringScheme,
            block_penalty: int) -> tuple[SyntenicBlock, ...]:
    """Matching regions and difference blocks of a path given as moves from start to end."""
    blocks = []
    i = j = 0
    k = 0
    count = len(moves)
    while k < count:
        move = moves[k]
        start_i, start_j = i, j
        if move >= kernels.MOVE_BLOCK_UP:
            # A difference block: its opening move, then extensions up to the next opening or region.
            while True:
                if move in (kernels.MOVE_BLOCK_UP, kernels.MOVE_BLOCK_OPEN_UP):
                    i += 1
                else:
                    j += 1
                k += 1
                if k == count:
                    break
                move = moves[k]
                if move not in (kernels.MOVE_BLOCK_UP, kernels.MOVE_BLOCK_LEFT):
                    break
            blocks.append(SyntenicBlock("difference", start_i, i, start_j, j, -block_penalty))
            continue
        ops = []
        while k < count and moves[k] < kernels.MOVE_BLOCK_UP:
            move = moves[k]
            if move == kernels.MOVE_DIAGONAL:
                ops.append("=" if query[i] == target[j] else "X")
                i += 1
                j += 1
            elif move == kernels.MOVE_DELETION:
                ops.append("D")
                j += 1
            else:
                ops.append("I")
                i += 1
            k += 1
        cigar = Cigar.from_ops("".join(ops))
        score = score_cigar(cigar, query[start_i:i], target[start_j:j], scheme)
        blocks.append(SyntenicBlock("match", start_i, i, start_j, j, score, cigar))
    return tuple(blocks)


def syntenic_align(query_codes, target_codes, scheme: ScoringScheme, block_penalty: int,
                   memory_budget: int = DEFAULT_MEMORY_BUDGET, progress=None, backend: str = "cpu",
                   device: int = 0) -> SyntenicAlignment:
    """Optimal syntenic alignment with its matching regions and difference blocks.

    The traceback uses one direction byte per cell when ``m * (n + 1)`` bytes fit
    ``memory_budget``; otherwise the checkpointed traceback of
    :mod:`~gpualign_plugin.traceback.checkpoint` (saved rows of 12 bytes per
    column, bands re-solved from them), which gives the same path.

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (length ``m``) and target (length ``n``).
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    block_penalty : int
        Cost ``d`` (positive) of one difference block.
    memory_budget : int
        Bytes of direction information held at once (default 256 MiB); peak
        memory is about this plus the saved rows.
    progress : callable, optional
        Called with the number of DP cells computed after each band (for a
        progress bar); the total is about ``m * n`` when everything fits the
        budget and two to three times that when it does not.
    backend : str
        ``'cpu'`` or ``'gpu'`` (resolved). The GPU computes the bands (the same
        values and direction bytes); the traceback walk stays on the CPU, so both
        give the same alignment. The budget also bounds the GPU's direction bytes.
    device : int
        CUDA device ordinal for the GPU backend.

    Returns
    -------
    SyntenicAlignment
        With ``query_id`` ``'query'`` and ``target_id`` ``'target'``
        (:func:`syntenic` fills in the record ids).

    Raises
    ------
    InputError
        A block penalty below 1, or scores that could overflow 32-bit integers.
    GpuMemoryError
        GPU backend: a band does not fit in free GPU memory.
    """
    _check_backend(backend)
    q, t, matrix, d = _prepare(query_codes, target_codes, scheme, block_penalty)
    if backend == "gpu":
        from gpualign_plugin.syntenic.gpu import GpuSyntenicProblem

        problem = GpuSyntenicProblem(q, t, matrix, scheme, d, progress, device)
    else:
        problem = cpu.SyntenicProblem(q, t, matrix, scheme, d, progress)
    if len(q) == 0:
        # No band holds row m = 0: the whole path lies on row 0.
        problem.score = int(problem.initial_state(len(t) + 1)[0, len(t)])
        problem.trace(np.empty((0, len(t) + 1), dtype=np.uint8), 0,
                      Cursor(0, len(t), kernels.STATE_S))
    else:
        checkpointed_traceback(problem, len(q), len(t), kernels.STATE_S, memory_budget)
    moves = problem.moves[:problem.length][::-1]
    blocks = _blocks(moves, q, t, scheme, d)
    return SyntenicAlignment("query", "target", len(q), len(t), problem.score, d, blocks)


def syntenic(query: Sequence, target: Sequence, scheme: ScoringScheme, block_penalty: int,
             memory_budget: int = DEFAULT_MEMORY_BUDGET, progress=None, backend: str = "cpu",
             device: int = 0, strand: str = "+") -> SyntenicAlignment:
    """Syntenic alignment of two records (see :func:`syntenic_align`), ids filled in.

    On ``strand='-'`` the reverse complement of the query is aligned to the target; the
    result's blocks give query intervals on the forward strand (``[m - end, m - start)`` of
    the reverse complement's ``[start, end)``), their CIGARs read the reverse-complemented
    query along the target, and ``strand`` is ``'-'``: the convention of pairwise
    alignments (:class:`~gpualign_plugin.model.Alignment`, PAF).

    Parameters
    ----------
    query, target : Sequence
        Encoded records (same alphabet as ``scheme``).
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    block_penalty : int
        Cost of one difference block (:func:`default_block_penalty` gives the CLI's default).
    memory_budget : int
        Bytes of direction information held at once.
    progress : callable, optional
        Called with DP cells done, as in :func:`syntenic_align`.
    backend, device
        ``'cpu'`` or ``'gpu'`` and the CUDA device, as in :func:`syntenic_align`.
    strand : str
        ``'+'`` (the query as given) or ``'-'`` (its reverse complement; DNA only).

    Returns
    -------
    SyntenicAlignment

    Raises
    ------
    ValueError
        A strand other than ``'+'`` and ``'-'``, or ``'-'`` with a protein scheme.
    """
    if strand not in ("+", "-"):
        raise ValueError(f"strand must be '+' or '-', got {strand!r}")
    if strand == "-" and not scheme.is_dna:
        raise ValueError("the minus strand exists only for DNA")
    codes = reverse_complement_codes(query.codes) if strand == "-" else query.codes
    result = syntenic_align(codes, target.codes, scheme, block_penalty, memory_budget,
                            progress, backend, device)
    if strand == "-":
        blocks = tuple(block.mirrored(result.query_length) for block in result.blocks)
        result = replace(result, blocks=blocks, strand="-")
    return replace(result, query_id=query.id, target_id=target.id)
