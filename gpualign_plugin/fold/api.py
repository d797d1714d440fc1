"""RNA secondary structure by base-pair maximisation (Nussinov), in Chang's simplified form.

``N(i, j)`` is the largest number of nested base pairs in ``s[i..j]`` (0-based, inclusive).
Allowed pairs: AU, GC and GU (either order); ``N`` and the other IUPAC ambiguity codes are
bases that pair with nothing; a pair ``(i, j)`` must enclose at least ``min_loop`` unpaired
bases (``j - i - 1 >= min_loop``). docs/ALGORITHMS.md ("RNA
folding") gives the recurrence, the boundaries and the traceback's tie rule.

Evaluation order: the upper triangle is cut into square blocks; block ``(I, J)`` needs only
blocks to its left in its block row and below in its block column, so the blocks of one
block diagonal ``J - I`` run in parallel. The matrix is kept twice, as rows and as columns
(its transpose), so the max-plus inner loop reads both operands contiguously.

References
----------
Nussinov R., Jacobson A. B. (1980) Fast algorithm for predicting the secondary structure
of single-stranded RNA. PNAS 77:6309-6313.
Chang D.-J., Kimmer C., Ouyang M. (2010) Accelerating the Nussinov RNA folding algorithm
with CUDA/GPU. IEEE ISSPIT 2010, 120-125.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.fold import cpu
from gpualign_plugin.scoring import DNA_LETTERS

RNA_LETTERS = cpu.RNA_LETTERS
AMBIGUITY_LETTERS = DNA_LETTERS[4:]
"""IUPAC ambiguity codes (``RYSWKMBDHVN``, the DNA alphabet's after ``ACGT``), read (either
case) as bases that pair with nothing."""

_TABLE = np.full(256, 255, dtype=np.uint8)
for _code, _letters in enumerate(("Aa", "Cc", "Gg", "UuTt")):
    for _letter in _letters:
        _TABLE[ord(_letter)] = _code
for _letter in AMBIGUITY_LETTERS + AMBIGUITY_LETTERS.lower():
    _TABLE[ord(_letter)] = cpu.UNPAIRED_CODE

@dataclass(frozen=True)
class Fold:
    """A secondary structure with the most base pairs.

    Attributes
    ----------
    pairs : tuple of (int, int)
        Base pairs ``(i, j)``, 0-based with ``i < j``, ordered by ``i``.
    structure : str
        Dot-bracket notation: ``(`` and ``)`` for paired bases, ``.`` for unpaired ones.
    score : int
        Number of base pairs (the maximum).
    """

    pairs: tuple
    structure: str
    score: int


def encode_rna(text: str, path: str | None = None, record: str | None = None) -> np.ndarray:
    """Encode RNA text to ``uint8`` codes (A=0, C=1, G=2, U=3; ``T`` as ``U``; IUPAC ambiguity
    codes such as ``N`` as :data:`~gpualign_plugin.fold.cpu.UNPAIRED_CODE`; case ignored).

    Raises
    ------
    InputError
        At the first other character, naming ``path``, ``record`` and its 1-based position.
    """
    raw = np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)
    codes = _TABLE[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        position = int(bad[0])
        raise InputError(f"character {text[position]!r} is not an RNA base (A, C, G, U, T or an "
                         "IUPAC ambiguity code)",
                         path=path, record=record, position=position + 1)
    if not codes.size:
        raise InputError("empty RNA sequence", path=path, record=record)
    return codes


def fold_cells(length: int) -> int:
    """Inner-loop updates of the fill for a sequence of ``length`` nucleotides.

    Each cell ``(i, j)`` with ``i < j`` tries ``j - i`` split points: in all
    ``(length - 1) length (length + 1) / 6`` updates (the unit of cells per second).
    """
    return (length - 1) * length * (length + 1) // 6


def _check_min_loop(min_loop) -> int:
    if int(min_loop) != min_loop or min_loop < 0:
        raise InputError(f"--min-loop must be an integer 0 or more, got {min_loop}")
    return int(min_loop)


def _as_codes(sequence) -> np.ndarray:
    return encode_rna(sequence) if isinstance(sequence, str) else np.asarray(sequence, np.uint8)


def _make_fold(n: int, pairs: np.ndarray, score: int) -> Fold:
    """The :class:`Fold` of ``pairs`` (``(k, 2)``, ordered by ``i``) on a sequence of ``n`` bases."""
    structure = np.full(n, ord("."), dtype=np.uint8)
    structure[pairs[:, 0]] = ord("(")
    structure[pairs[:, 1]] = ord(")")
    return Fold(pairs=tuple(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist())),
                structure=structure.tobytes().decode("ascii"), score=int(score))


def fold(sequence, min_loop: int = 0, progress: Callable[[int], None] | None = None,
         backend: str = "cpu", device: int = 0) -> Fold:
    """Fold an RNA sequence into a structure with the most nested base pairs.

    Parameters
    ----------
    sequence : str or numpy.ndarray
        RNA text (``ACGU``, ``T`` read as ``U``, either case) or codes from :func:`encode_rna`.
    min_loop : int
        Fewest unpaired bases a pair must enclose (a hairpin's loop length); 0, the
        default, allows adjacent bases to pair, as in the classic Nussinov formulation.
    progress : callable, optional
        Called with split-point updates done (they add up to :func:`fold_cells` of the
        length): after each block diagonal on the CPU, each tile diagonal on the GPU.
    backend : {'cpu', 'gpu'}
        Already resolved (see :func:`gpualign_plugin.runtime.backend.resolve_backend`);
        both give the same :class:`Fold`.
    device : int
        CUDA device ordinal for the GPU backend.

    Returns
    -------
    Fold
        Pairs, dot-bracket structure and pair count. Among structures with equally many
        pairs, the one the written traceback rule picks (docs/ALGORITHMS.md).

    Examples
    --------
    >>> fold("GGGAAAUCC", min_loop=3).structure
    '(((...)))'
    """
    codes = _as_codes(sequence)
    min_loop = _check_min_loop(min_loop)
    if backend == "gpu":
        return fold_many([codes], min_loop, backend, device, progress)[0]
    if backend != "cpu":
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    n = codes.size
    rows = np.zeros((n + 1, n + 1), dtype=np.int32)
    cols = np.zeros((n + 1, n + 1), dtype=np.int32)
    for diagonal in range((n + cpu.BLOCK - 1) // cpu.BLOCK):
        cpu.fill_block_diagonal(codes, min_loop, rows, cols, diagonal)
        if progress is not None:
            progress(cpu.block_diagonal_updates(n, diagonal))
    pairs = np.empty((n // 2 + 1, 2), dtype=np.int64)
    count = cpu.traceback(codes, min_loop, rows, pairs)
    pairs = pairs[:count]
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    return _make_fold(n, pairs, int(rows[0, n - 1]) if n else 0)


def fold_many(sequences, min_loop: int = 0, backend: str = "cpu", device: int = 0,
              progress: Callable[[int], None] | None = None) -> list[Fold]:
    """:func:`fold` of every sequence (text or codes); on the GPU many sequences share each launch.

    ``progress`` is called with split-point updates as they are done (:func:`fold_cells`
    of each length in all): per block diagonal of each sequence on the CPU, per tile
    diagonal of each group of sequences on the GPU. Results are in the order of ``sequences`` and
    the same on both backends. The GPU engine (:mod:`gpualign_plugin.fold.gpu`) takes
    sequences of up to 65,000 nt and folds them in groups that fit half the free
    device memory.
    """
    codes = [_as_codes(s) for s in sequences]
    min_loop = _check_min_loop(min_loop)
    if backend != "gpu":
        return [fold(c, min_loop, progress, backend) for c in codes]
    from gpualign_plugin.fold import gpu

    return [_make_fold(c.size, pairs, score)
            for c, (pairs, score) in zip(codes, gpu.fold_many(codes, min_loop, device, progress=progress))]
