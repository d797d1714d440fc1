"""Exact pairwise alignment (Gotoh affine gaps): local, global and semiglobal, on the CPU.

The recurrences, boundaries, end-cell rule and traceback priority are those of
docs/ALGORITHMS.md ("Pairwise"); every function here, the checkpointed
traceback and the GPU engine return the same answer for the same input.

Conventions: sequences are ``uint8`` code arrays of the scheme's alphabet; the
query indexes rows (``i``, length ``m``), the target columns (``j``, length
``n``); coordinates are 0-based half-open on the sequences as given; scores
are integers (a gap of length ``k`` costs ``open + k * extend``). Modes:
``'local'`` (Smith-Waterman-Gotoh), ``'global'`` (Needleman-Wunsch-Gotoh) and
``'semiglobal'`` (the query end to end, free end gaps on the target).

Example
-------
>>> from gpualign_plugin.scoring import ScoringScheme
>>> scheme = ScoringScheme.dna()
>>> q = scheme.alphabet.encode("ACGTTGCA")
>>> t = scheme.alphabet.encode("TTACGTAGCATT")
>>> result = align_pair(q, t, scheme, "local")
>>> result.score, str(result.cigar), (result.target_start, result.target_end)
(11, '4=1X3=', (2, 10))
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from gpualign_plugin.engines import pairwise_kernels as kernels
from gpualign_plugin.engines.checkpoint import Cursor, checkpointed_traceback
from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Alignment, Cigar
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes

MODES = ("local", "global", "semiglobal")
_MODE_CODES = {"local": kernels.LOCAL, "global": kernels.GLOBAL, "semiglobal": kernels.SEMIGLOBAL}
DEFAULT_MEMORY_BUDGET = 256 * 2**20


@dataclass(frozen=True)
class PairScore:
    """Score-only result.

    Attributes
    ----------
    score : int
        The optimal score (0 for local with no positive cell).
    query_end, target_end : int
        The end cell ``(i, j)`` chosen by the end-cell rule: half-open ends of the
        alignment on the query and target as given (0, 0 when local finds nothing).
    """

    score: int
    query_end: int
    target_end: int


@dataclass(frozen=True)
class PairAlignment:
    """Full result, coordinates on the sequences as given (already oriented).

    Attributes
    ----------
    score : int
        The optimal score.
    query_start, query_end, target_start, target_end : int
        0-based half-open intervals the CIGAR spans.
    cigar : Cigar
        ``=XID`` operations along the target.

    A local alignment with no positive cell has score 0, all coordinates 0 and
    an empty CIGAR.
    """

    score: int
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    cigar: Cigar


def _prepare(query_codes, target_codes, scheme: ScoringScheme, mode: str):
    if mode not in _MODE_CODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    q = np.ascontiguousarray(query_codes, dtype=np.uint8)
    t = np.ascontiguousarray(target_codes, dtype=np.uint8)
    scheme.check_score_range(len(q), len(t))
    return q, t, np.ascontiguousarray(scheme.matrix, dtype=np.int32), _MODE_CODES[mode]


def _score(q, t, matrix, scheme, mode_code) -> PairScore:
    # Rows run over the longer sequence so that the row buffers are O(min(m, n)).
    if len(t) < len(q):
        result = kernels.score_kernel(t, q, matrix, scheme.gap_open, scheme.gap_extend,
                                      mode_code, True)
    else:
        result = kernels.score_kernel(q, t, matrix, scheme.gap_open, scheme.gap_extend,
                                      mode_code, False)
    return PairScore(*(int(x) for x in result))


def score_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str,
               threads: int | None = None) -> PairScore:
    """Optimal score and end cell of one pair, in O(min(m, n)) memory (O(m + n) when tiled).

    With more than one thread and a pair of at least :data:`TILED_MIN_CELLS`
    cells and two tiles per side, the tiled wavefront kernel runs (see
    :func:`score_pair_tiled`); otherwise the single-threaded row kernel. Both
    give the identical result.

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (rows) and target (columns).
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    threads : int, optional
        CPU threads (at most Numba's ``NUMBA_NUM_THREADS``); default
        ``numba.get_num_threads()``. Callers that score pairs from several
        Python threads at once should pass ``1`` (one core per pair, no
        oversubscription; Numba's ``workqueue`` threading layer also refuses
        concurrent parallel kernels).

    Returns
    -------
    PairScore

    Raises
    ------
    InputError
        If the scores could overflow 32-bit integers.
    """
    q, t, matrix, mode_code = _prepare(query_codes, target_codes, scheme, mode)
    return _end_cell(q, t, matrix, scheme, mode_code, _thread_count(threads))


TILED_MIN_CELLS = 50_000_000
"""Smallest ``m * n`` for which :func:`score_pair` uses the tiled kernel (it pays off well above)."""


def tile_shape(query_length: int, target_length: int, threads: int) -> tuple[int, int] | None:
    """The tiles :func:`score_pair` uses for a pair with ``threads`` threads, or ``None``.

    Parameters
    ----------
    query_length, target_length : int
        Residues of the query (rows) and target (columns).
    threads : int
        Threads allowed.

    Returns
    -------
    (int, int) or None
        ``(tile_rows, tile_cols)`` in cells when the tiled kernel runs (more than
        one thread, at least :data:`TILED_MIN_CELLS` cells and two tiles per
        side); ``None`` when the single-threaded row kernel runs.
    """
    tile_rows, tile_cols = _tile_size(query_length, threads), _tile_size(target_length, threads)
    if (threads > 1 and query_length * target_length >= TILED_MIN_CELLS
            and query_length >= 2 * tile_rows and target_length >= 2 * tile_cols):
        return tile_rows, tile_cols
    return None


def _thread_count(threads: int | None) -> int:
    if threads is None:
        return numba.get_num_threads()
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return min(threads, numba.config.NUMBA_NUM_THREADS)


def _tile_size(length: int, threads: int) -> int:
    # About 8 tiles per thread along each side, so that the waves that ramp up
    # and down are short; at least 256 so a wave's work outweighs its start,
    # at most 2048 so a tile's row state stays in the core's cache.
    return min(2048, max(256, -(-length // (8 * threads))))


def _end_cell(q, t, matrix, scheme, mode_code, threads: int) -> PairScore:
    tiles = tile_shape(len(q), len(t), threads)
    if tiles is None:
        return _score(q, t, matrix, scheme, mode_code)
    return _score_tiled(q, t, matrix, scheme, mode_code, *tiles, threads)


def _score_tiled(q, t, matrix, scheme, mode_code, tile_rows, tile_cols, threads) -> PairScore:
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        result = kernels.tiled_score_kernel(q, t, matrix, scheme.gap_open, scheme.gap_extend,
                                            mode_code, tile_rows, tile_cols)
    finally:
        numba.set_num_threads(previous)
    return PairScore(*(int(x) for x in result))


def score_pair_tiled(query_codes, target_codes, scheme: ScoringScheme, mode: str,
                     tile_rows: int, tile_cols: int, threads: int | None = None) -> PairScore:
    """:func:`score_pair` by the tiled wavefront kernel with the tile shape given.

    The matrix is cut into tiles of ``tile_rows`` query residues x ``tile_cols``
    target residues; the tiles of one anti-diagonal of tiles run in parallel,
    one synchronisation per anti-diagonal. Memory is O(m + n). The result is
    identical to :func:`score_pair`'s for every tile shape (the tests force
    tiny tiles to prove it).

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query (rows) and target (columns).
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    tile_rows, tile_cols : int
        Tile height and width in cells (at least 1).
    threads : int, optional
        CPU threads; default ``numba.get_num_threads()``.

    Returns
    -------
    PairScore
    """
    if tile_rows < 1 or tile_cols < 1:
        raise ValueError(f"tiles must be at least 1x1, got {tile_rows}x{tile_cols}")
    q, t, matrix, mode_code = _prepare(query_codes, target_codes, scheme, mode)
    return _score_tiled(q, t, matrix, scheme, mode_code, tile_rows, tile_cols,
                        _thread_count(threads))


class GotohProblem:
    """The Gotoh recurrence as a :mod:`~gpualign_plugin.engines.checkpoint` problem.

    The state of a row is an ``int32`` array of shape ``(2, width)``: ``H`` and
    ``F``. Operations collect in :attr:`ops` (end to start) up to :attr:`length`.
    """

    direction_bytes_per_cell = 1
    state_bytes_per_column = 8

    def __init__(self, query, target, matrix, scheme: ScoringScheme, mode_code: int):
        self.query = query
        self.target = target
        self.matrix = matrix
        self.gap_open = scheme.gap_open
        self.gap_extend = scheme.gap_extend
        self.mode = mode_code
        self.ops = np.empty(len(query) + len(target), dtype=np.uint8)
        self.length = 0

    def initial_state(self, width: int) -> np.ndarray:
        """Row 0: ``H`` and ``F`` over columns ``0..width-1``."""
        state = np.empty((2, width), dtype=np.int32)
        kernels.initial_row(width, self.gap_open, self.gap_extend, self.mode == kernels.GLOBAL,
                            state[0], state[1])
        return state

    def forward(self, r0: int, top: np.ndarray, width: int, save_rows) -> list:
        """States of the rows in ``save_rows``, computed from ``top`` (row ``r0``)."""
        H = top[0, :width].copy()
        F = top[1, :width].copy()
        saved = np.empty((len(save_rows), 2, width), dtype=np.int32)
        kernels.forward_rows(self.query, self.target, self.matrix, self.gap_open, self.gap_extend,
                             self.mode, r0, width, H, F, np.asarray(save_rows, dtype=np.int64),
                             saved)
        return list(saved)

    def directions(self, r0: int, r1: int, top: np.ndarray, width: int) -> np.ndarray:
        """Direction bytes of rows ``r0+1..r1`` over columns ``0..width-1``."""
        H = top[0, :width].copy()
        F = top[1, :width].copy()
        dirs = np.empty((r1 - r0, width), dtype=np.uint8)
        kernels.band_directions(self.query, self.target, self.matrix, self.gap_open,
                                self.gap_extend, self.mode, r0, width, H, F, dirs)
        return dirs

    def trace(self, dirs: np.ndarray, r0: int, cursor: Cursor) -> bool:
        """Walk the band; see the protocol in :mod:`~gpualign_plugin.engines.checkpoint`."""
        i, j, state, self.length, done = kernels.trace_band(
            dirs, r0, self.query, self.target, self.mode, cursor.row, cursor.col, cursor.state,
            self.ops, self.length)
        cursor.row, cursor.col, cursor.state = int(i), int(j), int(state)
        return bool(done)


def _cigar(ops: np.ndarray) -> Cigar:
    """CIGAR of path operations given end to start."""
    ops = ops[::-1]
    if ops.size == 0:
        return Cigar(())
    starts = np.flatnonzero(np.concatenate(([True], ops[1:] != ops[:-1])))
    lengths = np.diff(np.append(starts, ops.size))
    return Cigar(tuple((int(n), kernels.OP_LETTERS[ops[s]]) for s, n in zip(starts, lengths)))


_EMPTY = PairAlignment(0, 0, 0, 0, 0, Cigar(()))


def align_pair(query_codes, target_codes, scheme: ScoringScheme, mode: str,
               memory_budget: int = DEFAULT_MEMORY_BUDGET, threads: int = 1) -> PairAlignment:
    """Optimal alignment of one pair with its CIGAR.

    The end cell comes from :func:`score_pair`; the traceback then uses one
    direction byte per cell of rows ``0..query_end`` and columns
    ``0..target_end`` when that fits ``memory_budget`` bytes, and otherwise the
    checkpointed traceback of :mod:`~gpualign_plugin.engines.checkpoint`, which
    returns the same path. Peak memory is ``memory_budget`` of direction bytes
    plus at most ``memory_budget`` of saved rows (8 bytes per column) per
    checkpoint level: measured 650 MiB peak RSS for two related 200 kbp DNA
    sequences with the default budget (one level).

    Parameters
    ----------
    query_codes, target_codes : numpy.ndarray
        ``uint8`` codes of the query and target.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    memory_budget : int
        Bytes of direction information held at once (default 256 MiB).
    threads : int
        Threads of the end-cell pass, as for :func:`score_pair` (default 1:
        callers align pairs from thread pools); the traceback runs on one.

    Returns
    -------
    PairAlignment
    """
    q, t, matrix, mode_code = _prepare(query_codes, target_codes, scheme, mode)
    end = _end_cell(q, t, matrix, scheme, mode_code, _thread_count(threads))
    if mode_code == kernels.LOCAL and end.score <= 0:
        return _EMPTY
    problem = GotohProblem(q, t, matrix, scheme, mode_code)
    start = checkpointed_traceback(problem, end.query_end, end.target_end, kernels.STATE_H,
                                   memory_budget)
    return PairAlignment(end.score, start.row, end.query_end, start.col, end.target_end,
                         _cigar(problem.ops[:problem.length]))


def _pack(pairs):
    """Concatenated query and target codes with offsets."""
    queries = [np.ascontiguousarray(q, dtype=np.uint8) for q, _ in pairs]
    targets = [np.ascontiguousarray(t, dtype=np.uint8) for _, t in pairs]
    q_offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    t_offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in queries], out=q_offsets[1:])
    np.cumsum([len(t) for t in targets], out=t_offsets[1:])
    empty = np.empty(0, dtype=np.uint8)
    return (np.concatenate(queries) if queries else empty, q_offsets,
            np.concatenate(targets) if targets else empty, t_offsets)


def _check_batch(pairs, scheme: ScoringScheme, mode: str):
    if mode not in _MODE_CODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    for q, t in pairs:
        scheme.check_score_range(len(q), len(t))
    return np.ascontiguousarray(scheme.matrix, dtype=np.int32), _MODE_CODES[mode]


def score_batch(pairs, scheme: ScoringScheme, mode: str) -> list[PairScore]:
    """:func:`score_pair` of every ``(query_codes, target_codes)`` pair (any iterable), in parallel.

    Uses ``numba.get_num_threads()`` threads; the result is in the order of ``pairs``.
    """
    pairs = list(pairs)
    matrix, mode_code = _check_batch(pairs, scheme, mode)
    qs, q_offsets, ts, t_offsets = _pack(pairs)
    out = np.empty((len(pairs), 3), dtype=np.int64)
    kernels.score_batch_kernel(qs, q_offsets, ts, t_offsets, matrix, scheme.gap_open,
                               scheme.gap_extend, mode_code, out)
    return [PairScore(int(s), int(qe), int(te)) for s, qe, te in out]


def align_batch(pairs, scheme: ScoringScheme, mode: str) -> list[PairAlignment]:
    """:func:`align_pair` of every ``(query_codes, target_codes)`` pair (any iterable), in parallel.

    Each pair keeps a full direction matrix (``(m+1) * (n+1)`` bytes) while it is
    being aligned, so this suits many short pairs (the reference workload is
    1,000 pairs of 512 bp); use :func:`align_pair` for long ones. Uses
    ``numba.get_num_threads()`` threads; results are in the order of ``pairs``.
    """
    pairs = list(pairs)
    matrix, mode_code = _check_batch(pairs, scheme, mode)
    qs, q_offsets, ts, t_offsets = _pack(pairs)
    ops_offsets = q_offsets + t_offsets
    ops = np.empty(int(ops_offsets[-1]), dtype=np.uint8)
    out = np.empty((len(pairs), 6), dtype=np.int64)
    kernels.align_batch_kernel(qs, q_offsets, ts, t_offsets, matrix, scheme.gap_open,
                               scheme.gap_extend, mode_code, out, ops, ops_offsets)
    results = []
    for k, (score, q_start, q_end, t_start, t_end, n_ops) in enumerate(out):
        if mode_code == kernels.LOCAL and score <= 0:
            results.append(_EMPTY)
            continue
        path = ops[ops_offsets[k]:ops_offsets[k] + n_ops]
        results.append(PairAlignment(int(score), int(q_start), int(q_end), int(t_start),
                                     int(t_end), _cigar(path)))
    return results


def strand_signs(strands: str, scheme: ScoringScheme) -> tuple[str, ...]:
    """The strands that ``--strand`` ``'both'`` or ``'plus'`` names: ``('+', '-')`` or ``('+',)``.

    Raises
    ------
    ValueError
        ``strands`` is neither ``'both'`` nor ``'plus'``.
    InputError
        ``'both'`` with a protein scheme (protein has one strand).
    """
    if strands not in ("both", "plus"):
        raise ValueError(f"strands must be 'both' or 'plus', got {strands!r}")
    if strands == "both" and not scheme.is_dna:
        raise InputError("--strand both needs DNA; protein has one strand (use --strand plus)")
    return ("+", "-") if strands == "both" else ("+",)


def align_sequences(query: Sequence, target: Sequence, scheme: ScoringScheme, mode: str,
                    strand: str = "+", backend: str = "cpu", device: int = 0) -> Alignment | None:
    """Align two records on one strand and return a :class:`~gpualign_plugin.model.Alignment`.

    Parameters
    ----------
    query, target : Sequence
        Encoded records.
    scheme : ScoringScheme
        Substitution matrix and gap costs.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    strand : str
        ``'+'``, or ``'-'`` to align the reverse complement of the query (DNA
        only); coordinates are mapped back to the query's forward strand
        (``query_start = m - end_rc``, ``query_end = m - start_rc``) and the
        CIGAR reads the reverse-complemented query along the target.
    backend : str
        ``'cpu'`` or ``'gpu'`` (a resolved backend, see
        :func:`gpualign_plugin.backend.resolve_backend`).
    device : int
        CUDA device ordinal for the GPU backend.

    Returns
    -------
    Alignment or None
        ``None`` when there is no alignment (local mode, score <= 0).
        ``is_primary`` and ``mapq`` keep their defaults (placement sets them).
    """
    if strand not in ("+", "-"):
        raise ValueError(f"strand must be '+' or '-', got {strand!r}")
    if strand == "-" and not scheme.is_dna:
        raise ValueError("the minus strand exists only for DNA")
    codes = reverse_complement_codes(query.codes) if strand == "-" else query.codes
    if backend == "gpu":
        from gpualign_plugin.gpu import pairwise as gpu_pairwise

        result = gpu_pairwise.align_pair(codes, target.codes, scheme, mode, device=device)
    elif backend == "cpu":
        result = align_pair(codes, target.codes, scheme, mode)
    else:
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    if mode == "local" and result.score <= 0:
        return None
    m = len(query)
    q_start, q_end = result.query_start, result.query_end
    if strand == "-":
        q_start, q_end = m - result.query_end, m - result.query_start
    return Alignment(query.id, target.id, m, len(target), q_start, q_end, result.target_start,
                     result.target_end, strand, result.score, result.cigar, mode)
