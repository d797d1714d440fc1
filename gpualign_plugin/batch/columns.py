"""Pairs and results of batch alignment as flat arrays: no Python object per pair on the way in or out.

:class:`SequencePairs` names each pair's query and target as a slice of two code
arrays (for instance the codes of two FASTA files read by
:func:`gpualign_plugin.io.fasta.read_fasta_arrays`), so a million pairs cost a few
arrays; the engines return :class:`gpualign_plugin.model.AlignmentColumns`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from gpualign_plugin.model import RUN_OPS, AlignmentColumns, PairAlignment
from gpualign_plugin.scoring import reverse_complement_codes

NUMPY_GATHER_ELEMENTS = 1 << 22
"""Largest gather :func:`gather_segments` may do with NumPy (16 bytes of index scratch an element)."""


def gather_segments(data: np.ndarray, starts, counts) -> tuple[np.ndarray, np.ndarray]:
    """Segments ``data[starts[k]:starts[k] + counts[k]]`` back to back.

    Returns ``(out, offsets)``: segment ``k`` is ``out[offsets[k]:offsets[k + 1]]``. By
    :func:`gpualign_plugin.io.columnar.gather_segments_parallel` on every core (imported then)
    when Numba is loaded already or the gather exceeds :data:`NUMPY_GATHER_ELEMENTS`; else by
    NumPy index arithmetic, so that small batches in a process without Numba, such as a GPU
    search's top hits, do not load it (its import and first call cost about a second of CPU
    time). The kernel is the faster: 0.08 ms against 4.3 ms for 4,096 read-sized segments on
    the development VM, which matters to the CPU engine's many chunks.
    """
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if "numba" in sys.modules or int(counts.sum()) > NUMPY_GATHER_ELEMENTS:
        from gpualign_plugin.io.columnar import gather_segments_parallel

        return gather_segments_parallel(data, starts, counts)
    return _gather_with_numpy(data, starts, counts)


def _gather_with_numpy(data: np.ndarray, starts: np.ndarray, counts: np.ndarray):
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    index = np.repeat(starts - offsets[:-1], counts)
    index += np.arange(offsets[-1], dtype=np.int64)
    return np.asarray(data)[index], offsets


@dataclass
class SequencePairs:
    """Pair ``k`` is ``query_codes[query_starts[k]:][:query_lengths[k]]`` against the same slice of the targets.

    The code arrays are ``uint8`` in the scheme's alphabet; starts and lengths are
    ``int64``. Slices may overlap or repeat (one record in several pairs).
    """

    query_codes: np.ndarray
    query_starts: np.ndarray
    query_lengths: np.ndarray
    target_codes: np.ndarray
    target_starts: np.ndarray
    target_lengths: np.ndarray

    @classmethod
    def from_list(cls, pairs) -> "SequencePairs":
        """The pairs of a sequence of ``(query_codes, target_codes)`` arrays."""
        queries, q_offsets = _concatenate([q for q, _ in pairs])
        targets, t_offsets = _concatenate([t for _, t in pairs])
        return cls(queries, q_offsets[:-1], np.diff(q_offsets), targets, t_offsets[:-1],
                   np.diff(t_offsets))

    @classmethod
    def of_records(cls, queries, targets, query_index: np.ndarray,
                   target_index: np.ndarray) -> "SequencePairs":
        """Record ``query_index[k]`` of ``queries`` with record ``target_index[k]`` of ``targets``.

        ``queries`` and ``targets`` are :class:`~gpualign_plugin.io.fasta.FastaArrays` (or
        anything with ``codes`` and ``offsets``).
        """
        query_index = np.asarray(query_index, dtype=np.int64)
        target_index = np.asarray(target_index, dtype=np.int64)
        return cls(queries.codes, queries.offsets[query_index],
                   queries.offsets[query_index + 1] - queries.offsets[query_index],
                   targets.codes, targets.offsets[target_index],
                   targets.offsets[target_index + 1] - targets.offsets[target_index])

    def __len__(self) -> int:
        return len(self.query_lengths)

    def cells(self) -> int:
        """DP cells of all pairs (``sum(m * n)``)."""
        return int(np.dot(self.query_lengths, self.target_lengths))

    def take(self, index) -> "SequencePairs":
        """The pairs ``index`` (an index array or slice), sharing the code arrays."""
        return SequencePairs(self.query_codes, self.query_starts[index], self.query_lengths[index],
                             self.target_codes, self.target_starts[index], self.target_lengths[index])

    def with_minus_strand(self) -> "SequencePairs":
        """These pairs, then the same pairs again with each query reverse-complemented (DNA codes)."""
        queries, offsets = self.packed_queries()
        # The reverse complement of the whole concatenation holds pair k's at the mirrored place.
        minus_starts = len(self.query_codes) + offsets[-1] - offsets[1:]
        return SequencePairs(np.concatenate((self.query_codes, reverse_complement_codes(queries))),
                             np.concatenate((self.query_starts, minus_starts)),
                             np.tile(self.query_lengths, 2), self.target_codes,
                             np.tile(self.target_starts, 2), np.tile(self.target_lengths, 2))

    def packed_queries(self) -> tuple[np.ndarray, np.ndarray]:
        """The queries back to back and their ``len(self) + 1`` offsets."""
        return gather_segments(self.query_codes, self.query_starts, self.query_lengths)

    def packed_targets(self) -> tuple[np.ndarray, np.ndarray]:
        """The targets back to back and their ``len(self) + 1`` offsets."""
        return gather_segments(self.target_codes, self.target_starts, self.target_lengths)


def _concatenate(arrays) -> tuple[np.ndarray, np.ndarray]:
    arrays = [np.ascontiguousarray(a, dtype=np.uint8) for a in arrays]
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in arrays], out=offsets[1:])
    return (np.concatenate(arrays) if arrays else np.empty(0, dtype=np.uint8)), offsets


def empty_columns(count: int = 0) -> AlignmentColumns:
    """``count`` pairs without an alignment (score 0, no runs)."""
    zeros = np.zeros(count, dtype=np.int64)
    return AlignmentColumns(zeros, zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(),
                            np.empty(0, dtype=np.uint32), np.zeros(count + 1, dtype=np.int64))


def columns_from_pairs(alignments: list[PairAlignment]) -> AlignmentColumns:
    """:class:`AlignmentColumns` of a list of :class:`PairAlignment` (the inverse of ``pairs()``)."""
    code = {op: k for k, op in enumerate(RUN_OPS)}
    runs = [length << 2 | code[op] for a in alignments for length, op in a.cigar.runs]
    offsets = np.zeros(len(alignments) + 1, dtype=np.int64)
    np.cumsum([len(a.cigar.runs) for a in alignments], out=offsets[1:])
    fields = np.array([(a.score, a.query_start, a.query_end, a.target_start, a.target_end)
                       for a in alignments], dtype=np.int64).reshape(-1, 5)
    return AlignmentColumns(*(np.ascontiguousarray(fields[:, c]) for c in range(5)),
                            np.array(runs, dtype=np.uint32), offsets)


def merge_columns(count: int, parts) -> AlignmentColumns:
    """One :class:`AlignmentColumns` of ``count`` pairs from ``(indices, columns)`` parts.

    Part ``(indices, columns)`` holds the results of pairs ``indices`` (in that order);
    every pair is in exactly one part.
    """
    merged = empty_columns(count)
    counts = np.zeros(count, dtype=np.int64)
    starts = np.zeros(count, dtype=np.int64)
    base = 0
    for indices, columns in parts:
        indices = np.asarray(indices, dtype=np.int64)
        for name in ("score", "query_start", "query_end", "target_start", "target_end"):
            getattr(merged, name)[indices] = getattr(columns, name)
        counts[indices] = columns.run_counts()
        starts[indices] = columns.run_offsets[:-1] + base
        base += len(columns.runs)
    runs = np.concatenate([columns.runs for _, columns in parts]) if parts else merged.runs
    merged.runs, merged.run_offsets = gather_segments(runs, starts, counts)
    return merged


def take_columns(columns: AlignmentColumns, index: np.ndarray) -> AlignmentColumns:
    """The results of pairs ``index`` (an index array), in that order."""
    index = np.asarray(index, dtype=np.int64)
    runs, offsets = gather_segments(columns.runs, columns.run_offsets[index],
                                    columns.run_counts()[index])
    return AlignmentColumns(columns.score[index], columns.query_start[index], columns.query_end[index],
                            columns.target_start[index], columns.target_end[index], runs, offsets)
