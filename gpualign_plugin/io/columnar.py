"""SAM, PAF and TSV text of many alignments at once, built from arrays (``gpualign batch``).

The lines are those :mod:`gpualign_plugin.io.sam` (through pysam), :mod:`gpualign_plugin.io.paf`
and the batch TSV write one alignment object at a time, byte for byte, but every line
is built by a parallel Numba kernel straight from an :class:`AlignmentTable`: no Python
object per alignment. Each kernel runs twice over the rows, once to measure every
line and once to write it at its offset in one buffer.

Limits of this path (the object writers cover the rest): no E-values (``ZE``/``ZB``),
no supplementary records (``SA``), no unmapped records (``gpualign batch`` appends those
with :func:`gpualign_plugin.io.sam.unmapped_lines`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from gpualign_plugin.io.atomic import atomic_path
from gpualign_plugin.io.names import Names
from gpualign_plugin.model import RUN_OPS, UNKNOWN_BASE

_OPS = np.frombuffer(RUN_OPS.encode("ascii"), dtype=np.uint8)
_SAM_BASES = "=ACMGRSVTWYHKDBN"
"""The bases BAM's 4-bit encoding keeps (htslib's ``seq_nt16_str``); ``U`` reads ``T``, other letters ``N``."""


@njit(cache=True, parallel=True)
def gather_segments_parallel(data, starts, counts):
    """Segments ``data[starts[k]:starts[k] + counts[k]]`` back to back.

    Returns ``(out, offsets)``: segment ``k`` is ``out[offsets[k]:offsets[k + 1]]``.
    """
    count = counts.shape[0]
    offsets = np.zeros(count + 1, np.int64)
    offsets[1:] = np.cumsum(counts)
    out = np.empty(offsets[count], data.dtype)
    for k in prange(count):
        out[offsets[k]:offsets[k + 1]] = data[starts[k]:starts[k] + counts[k]]
    return out, offsets


def _sam_base_table() -> np.ndarray:
    """SAM SEQ letter of each text byte, as pysam stores and writes it (htslib's ``seq_nt16_table``)."""
    table = np.full(256, ord("N"), dtype=np.uint8)
    for letter in _SAM_BASES:
        table[ord(letter)] = table[ord(letter.lower())] = ord(letter)
    table[ord("U")] = table[ord("u")] = ord("T")
    return table


def _complement_table() -> np.ndarray:
    """Complement of each text byte (IUPAC, case kept), as :func:`gpualign_plugin.scoring.reverse_complement_text`."""
    from gpualign_plugin.scoring import reverse_complement_text

    table = np.arange(256, dtype=np.uint8)
    letters = bytes(range(32, 127)).decode("ascii")
    complemented = reverse_complement_text(letters)[::-1]
    table[32:127] = np.frombuffer(complemented.encode("ascii"), dtype=np.uint8)
    return table


_SEQ_PLUS = _sam_base_table()
_SEQ_MINUS = _SEQ_PLUS[_complement_table()]


@dataclass
class AlignmentTable:
    """Alignments as arrays, one row each, for the bulk writers.

    Attributes
    ----------
    query_names, target_names : Names
        Record names; rows refer to them through ``query_index`` and ``target_index``.
    query_index, target_index : numpy.ndarray
        ``int64`` record of each row's query and target.
    query_length, target_length : numpy.ndarray
        ``int64`` full record lengths.
    query_start, query_end, target_start, target_end : numpy.ndarray
        ``int64``, 0-based half-open on the forward strands (as in :class:`~gpualign_plugin.model.Alignment`).
    minus : numpy.ndarray
        ``bool``: the query's reverse complement aligned (strand ``-``).
    score : numpy.ndarray
        ``int64`` alignment score.
    runs, run_offsets : numpy.ndarray
        CIGAR runs along the target, as in :class:`~gpualign_plugin.model.AlignmentColumns`.
    primary : numpy.ndarray
        ``bool``: the primary alignment of its query (others are secondary).
    mapq : numpy.ndarray
        ``int64`` mapping quality.
    """

    query_names: Names
    target_names: Names
    query_index: np.ndarray
    target_index: np.ndarray
    query_length: np.ndarray
    target_length: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    minus: np.ndarray
    score: np.ndarray
    runs: np.ndarray
    run_offsets: np.ndarray
    primary: np.ndarray
    mapq: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    def take(self, rows: np.ndarray) -> "AlignmentTable":
        """The rows ``rows`` (an index array), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        runs, offsets = gather_segments_parallel(self.runs, self.run_offsets[rows],
                                                 np.diff(self.run_offsets)[rows])
        picked = {name: getattr(self, name)[rows] for name in (
            "query_index", "target_index", "query_length", "target_length", "query_start",
            "query_end", "target_start", "target_end", "minus", "score", "primary", "mapq")}
        return AlignmentTable(self.query_names, self.target_names, runs=runs, run_offsets=offsets,
                              **picked)


@njit(cache=True, nogil=True)
def _put_byte(buf, pos, value, write):
    if write:
        buf[pos] = value
    return pos + 1


@njit(cache=True, nogil=True)
def _put_int(buf, pos, value, write):
    if value < 0:
        pos = _put_byte(buf, pos, 45, write)
        value = -value
    digits = 1
    rest = value // 10
    while rest > 0:
        digits += 1
        rest //= 10
    if write:
        for d in range(digits - 1, -1, -1):
            buf[pos + d] = 48 + value % 10
            value //= 10
    return pos + digits


@njit(cache=True, nogil=True)
def _put_slice(buf, pos, source, start, stop, write):
    if write:
        buf[pos:pos + stop - start] = source[start:stop]
    return pos + stop - start


@njit(cache=True, nogil=True)
def _put_text(buf, pos, text, write):
    for x in range(text.shape[0]):
        pos = _put_byte(buf, pos, text[x], write)
    return pos


@njit(cache=True, nogil=True)
def _put_score_tags(buf, pos, as_tag, score, nm_tag, edits, write):
    """The ``AS:i:`` and ``NM:i:`` tags (``as_tag``/``nm_tag`` hold their prefixes), tab-separated."""
    pos = _put_text(buf, pos, as_tag, write)
    pos = _put_int(buf, pos, score, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_text(buf, pos, nm_tag, write)
    return _put_int(buf, pos, edits, write)


@njit(cache=True, nogil=True)
def _put_runs(buf, pos, runs, first, last, ops, write):
    """The CIGAR of ``runs[first:last]`` (``*`` when there are none)."""
    if first == last:
        return _put_byte(buf, pos, 42, write)
    for r in range(first, last):
        pos = _put_int(buf, pos, runs[r] >> 2, write)
        pos = _put_byte(buf, pos, ops[runs[r] & 3], write)
    return pos


@njit(cache=True, nogil=True)
def _run_sums(runs, first, last):
    """``(matches, mismatches, gap columns, gap opens, columns)`` of ``runs[first:last]``."""
    matches = mismatches = gaps = opens = 0
    for r in range(first, last):
        length = runs[r] >> 2
        op = runs[r] & 3
        if op == 0:
            matches += length
        elif op == 1:
            mismatches += length
        else:
            gaps += length
            opens += 1
    return matches, mismatches, gaps, opens, matches + mismatches + gaps


@njit(cache=True, nogil=True)
def _tsv_row(buf, pos, k, write, qn, qo, tn, to, qi, ti, qs, qe, ts, te, minus, score, runs, ro, ops):
    pos = _put_slice(buf, pos, qn, qo[qi[k]], qo[qi[k] + 1] - 1, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_slice(buf, pos, tn, to[ti[k]], to[ti[k] + 1] - 1, write)
    for value in (score[k], qs[k], qe[k], ts[k], te[k]):
        pos = _put_byte(buf, pos, 9, write)
        pos = _put_int(buf, pos, value, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_runs(buf, pos, runs, ro[k], ro[k + 1], ops, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_byte(buf, pos, 45 if minus[k] else 43, write)
    return _put_byte(buf, pos, 10, write)


@njit(cache=True, parallel=True)
def _tsv_lines(qn, qo, tn, to, qi, ti, qs, qe, ts, te, minus, score, runs, ro, ops):
    count = score.shape[0]
    empty = np.empty(0, np.uint8)
    ends = np.zeros(count + 1, np.int64)
    for k in prange(count):
        ends[k + 1] = _tsv_row(empty, 0, k, False, qn, qo, tn, to, qi, ti, qs, qe, ts, te, minus,
                               score, runs, ro, ops)
    ends = np.cumsum(ends)
    buf = np.empty(ends[count], np.uint8)
    for k in prange(count):
        _tsv_row(buf, ends[k], k, True, qn, qo, tn, to, qi, ti, qs, qe, ts, te, minus, score, runs,
                 ro, ops)
    return buf


def tsv_lines(table: AlignmentTable) -> np.ndarray:
    """The batch TSV's lines (no header), ``uint8`` text: ``qid tid score qstart qend tstart tend cigar strand``."""
    t = table
    return _tsv_lines(t.query_names.data, t.query_names.offsets, t.target_names.data,
                      t.target_names.offsets, t.query_index, t.target_index, t.query_start,
                      t.query_end, t.target_start, t.target_end, t.minus, t.score, t.runs,
                      t.run_offsets, _OPS)


_TP_AS = np.frombuffer(b"tp:A:", dtype=np.uint8)
_AS = np.frombuffer(b"AS:i:", dtype=np.uint8)
_NM = np.frombuffer(b"NM:i:", dtype=np.uint8)
_NN = np.frombuffer(b"nn:i:", dtype=np.uint8)
_CG = np.frombuffer(b"cg:Z:", dtype=np.uint8)


@njit(cache=True, nogil=True)
def _unknown_matches(runs, first, last, target_text, start, unknown):
    """``=`` columns of ``runs[first:last]`` whose target letter is ``unknown`` (an upper-case byte;
    0: none): an N matched by an N (:data:`~gpualign_plugin.model.UNKNOWN_BASE`)."""
    count = 0
    if unknown == 0:
        return 0
    position = start
    for r in range(first, last):
        length = runs[r] >> 2
        op = runs[r] & 3
        if op == 0:
            for x in range(position, position + length):
                count += (target_text[x] & 0xDF) == unknown
        if op != 2:
            position += length
    return count


@njit(cache=True, parallel=True)
def _unknown_counts(runs, ro, target_text, target_offsets, ti, ts, unknown):
    counts = np.zeros(ro.shape[0] - 1, np.int64)
    for k in prange(ro.shape[0] - 1):
        counts[k] = _unknown_matches(runs, ro[k], ro[k + 1], target_text, target_offsets[ti[k]] + ts[k],
                                     unknown)
    return counts


def unknown_counts(table: AlignmentTable, target_text: np.ndarray, target_offsets: np.ndarray,
                   dna: bool) -> np.ndarray:
    """Per row, its ``=`` columns of an N against an N (``int64``; zeros unless ``dna``): what
    samtools calmd counts as differences in SAM (:func:`gpualign_plugin.model.unknown_matches`)."""
    return _unknown_counts(table.runs, table.run_offsets, target_text, target_offsets, table.target_index,
                           table.target_start, ord(UNKNOWN_BASE) if dna else 0)


@njit(cache=True, nogil=True)
def _is_ambiguous(letter):
    upper = letter & 0xDF
    return not (upper == 65 or upper == 67 or upper == 71 or upper == 84)


@njit(cache=True, nogil=True)
def _ambiguous_columns(runs, first, last, query_text, query_start, query_end, minus, target_text,
                       target_start):
    """``(matched, columns)`` of ``runs[first:last]`` as :func:`gpualign_plugin.model.ambiguous_columns`
    counts them; query and target positions in their texts, the query's ``[query_start, query_end)``
    read backwards when ``minus`` (a complement is ambiguous where its base is)."""
    matched = columns = 0
    q = query_end - 1 if minus else query_start
    step = -1 if minus else 1
    t = target_start
    for r in range(first, last):
        length = runs[r] >> 2
        op = runs[r] & 3
        for _ in range(length):
            in_query = op != 3 and _is_ambiguous(query_text[q])
            in_target = op != 2 and _is_ambiguous(target_text[t])
            columns += in_query or in_target
            matched += op == 0 and in_target
            if op != 3:
                q += step
            if op != 2:
                t += 1
    return matched, columns


@njit(cache=True, parallel=True)
def _ambiguous_counts(runs, ro, query_text, query_offsets, qi, qs, qe, minus, target_text,
                      target_offsets, ti, ts):
    counts = np.zeros((ro.shape[0] - 1, 2), np.int64)
    for k in prange(ro.shape[0] - 1):
        base = query_offsets[qi[k]]
        counts[k, 0], counts[k, 1] = _ambiguous_columns(runs, ro[k], ro[k + 1], query_text, base + qs[k],
                                                        base + qe[k], minus[k], target_text,
                                                        target_offsets[ti[k]] + ts[k])
    return counts


@njit(cache=True, nogil=True)
def _paf_row(buf, pos, k, write, qn, qo, tn, to, qi, ti, ql, tl, qs, qe, ts, te, minus, score, runs,
             ro, primary, mapq, ops, tp_tag, as_tag, nm_tag, nn_tag, cg_tag, ambiguous, dna):
    matches, mismatches, gaps, _, columns = _run_sums(runs, ro[k], ro[k + 1])
    matches -= ambiguous[k, 0]
    mismatches += ambiguous[k, 0]
    pos = _put_slice(buf, pos, qn, qo[qi[k]], qo[qi[k] + 1] - 1, write)
    for value in (ql[k], qs[k], qe[k]):
        pos = _put_byte(buf, pos, 9, write)
        pos = _put_int(buf, pos, value, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_byte(buf, pos, 45 if minus[k] else 43, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_slice(buf, pos, tn, to[ti[k]], to[ti[k] + 1] - 1, write)
    for value in (tl[k], ts[k], te[k], matches, columns - ambiguous[k, 1], mapq[k]):
        pos = _put_byte(buf, pos, 9, write)
        pos = _put_int(buf, pos, value, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_text(buf, pos, tp_tag, write)
    pos = _put_byte(buf, pos, 80 if primary[k] else 83, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_score_tags(buf, pos, as_tag, score[k], nm_tag, mismatches + gaps, write)
    if dna:
        pos = _put_byte(buf, pos, 9, write)
        pos = _put_text(buf, pos, nn_tag, write)
        pos = _put_int(buf, pos, ambiguous[k, 1], write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_text(buf, pos, cg_tag, write)
    pos = _put_runs(buf, pos, runs, ro[k], ro[k + 1], ops, write)
    return _put_byte(buf, pos, 10, write)


@njit(cache=True, parallel=True)
def _paf_lines(qn, qo, tn, to, qi, ti, ql, tl, qs, qe, ts, te, minus, score, runs, ro, primary, mapq,
               ops, tp_tag, as_tag, nm_tag, nn_tag, cg_tag, ambiguous, dna):
    count = score.shape[0]
    empty = np.empty(0, np.uint8)
    ends = np.zeros(count + 1, np.int64)
    for k in prange(count):
        ends[k + 1] = _paf_row(empty, 0, k, False, qn, qo, tn, to, qi, ti, ql, tl, qs, qe, ts, te,
                               minus, score, runs, ro, primary, mapq, ops, tp_tag, as_tag, nm_tag,
                               nn_tag, cg_tag, ambiguous, dna)
    ends = np.cumsum(ends)
    buf = np.empty(ends[count], np.uint8)
    for k in prange(count):
        _paf_row(buf, ends[k], k, True, qn, qo, tn, to, qi, ti, ql, tl, qs, qe, ts, te, minus, score,
                 runs, ro, primary, mapq, ops, tp_tag, as_tag, nm_tag, nn_tag, cg_tag, ambiguous, dna)
    return buf


def paf_lines(table: AlignmentTable, query_text: np.ndarray, query_offsets: np.ndarray,
              target_text: np.ndarray, target_offsets: np.ndarray, dna: bool) -> np.ndarray:
    """PAF lines of every row (``uint8`` text), in row order, as :func:`gpualign_plugin.io.paf.paf_line`
    writes them (given the DNA records when ``dna``: ambiguous bases counted as minimap2 counts them;
    the texts and offsets as in :func:`sam_lines`)."""
    t = table
    ambiguous = (_ambiguous_counts(t.runs, t.run_offsets, query_text, query_offsets, t.query_index,
                                   t.query_start, t.query_end, t.minus, target_text, target_offsets,
                                   t.target_index, t.target_start) if dna
                 else np.zeros((len(t), 2), np.int64))
    return _paf_lines(t.query_names.data, t.query_names.offsets, t.target_names.data,
                      t.target_names.offsets, t.query_index, t.target_index, t.query_length,
                      t.target_length, t.query_start, t.query_end, t.target_start, t.target_end,
                      t.minus, t.score, t.runs, t.run_offsets, t.primary, t.mapq, _OPS, _TP_AS, _AS,
                      _NM, _NN, _CG, ambiguous, dna)


_SAM_MD = np.frombuffer(b"MD:Z:", dtype=np.uint8)
_SAM_DE = np.frombuffer(b"de:f:", dtype=np.uint8)
_SAM_MATES = np.frombuffer(b"\t*\t0\t0\t", dtype=np.uint8)


@njit(cache=True, nogil=True)
def _md_ok(runs, first, last, target_text, start):
    """Whether every mismatched or deleted target residue is a letter (the MD grammar's condition)."""
    position = start
    for r in range(first, last):
        length = runs[r] >> 2
        op = runs[r] & 3
        if op == 1 or op == 3:
            for x in range(position, position + length):
                letter = target_text[x] & 0xDF
                if letter < 65 or letter > 90:
                    return False
        if op != 2:
            position += length
    return True


@njit(cache=True, nogil=True)
def _put_md(buf, pos, runs, first, last, target_text, start, unknown, write):
    matched = 0
    position = start
    for r in range(first, last):
        length = runs[r] >> 2
        op = runs[r] & 3
        if op == 0 and unknown != 0:
            for x in range(position, position + length):
                if (target_text[x] & 0xDF) == unknown:
                    pos = _put_int(buf, pos, matched, write)
                    pos = _put_byte(buf, pos, unknown, write)
                    matched = 0
                else:
                    matched += 1
            position += length
        elif op == 0:
            matched += length
            position += length
        elif op == 1:
            for x in range(position, position + length):
                pos = _put_int(buf, pos, matched, write)
                pos = _put_byte(buf, pos, target_text[x] & 0xDF, write)
                matched = 0
            position += length
        elif op == 3:
            pos = _put_int(buf, pos, matched, write)
            pos = _put_byte(buf, pos, 94, write)
            for x in range(position, position + length):
                pos = _put_byte(buf, pos, target_text[x] & 0xDF, write)
            matched = 0
            position += length
    return _put_int(buf, pos, matched, write)


@njit(cache=True, nogil=True)
def _sam_row(buf, pos, k, write, qn, qo, tn, to, qi, ti, ql, qs, qe, ts, te, minus, score, runs, ro,
             primary, mapq, ops, query_text, query_offsets, target_text, target_offsets, with_seq,
             seq_plus, seq_minus, de_text, de_offsets, de_index, as_tag, nm_tag, md_tag, de_tag, mates,
             unknown, unknowns):
    first, last = ro[k], ro[k + 1]
    _, mismatches, gaps, _, _ = _run_sums(runs, first, last)
    start = target_offsets[ti[k]] + ts[k]
    pos = _put_slice(buf, pos, qn, qo[qi[k]], qo[qi[k] + 1] - 1, write)
    pos = _put_byte(buf, pos, 9, write)
    flag = (16 if minus[k] else 0) | (0 if primary[k] else 256)
    pos = _put_int(buf, pos, flag, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_slice(buf, pos, tn, to[ti[k]], to[ti[k] + 1] - 1, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_int(buf, pos, ts[k] + 1, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_int(buf, pos, mapq[k], write)
    pos = _put_byte(buf, pos, 9, write)
    head, tail = qs[k], ql[k] - qe[k]
    if minus[k]:
        head, tail = tail, head
    if head > 0:
        pos = _put_int(buf, pos, head, write)
        pos = _put_byte(buf, pos, 83, write)
    for r in range(first, last):
        pos = _put_int(buf, pos, runs[r] >> 2, write)
        pos = _put_byte(buf, pos, ops[runs[r] & 3], write)
    if tail > 0:
        pos = _put_int(buf, pos, tail, write)
        pos = _put_byte(buf, pos, 83, write)
    pos = _put_text(buf, pos, mates, write)
    if with_seq and primary[k]:
        q0, q1 = query_offsets[qi[k]], query_offsets[qi[k] + 1]
        if minus[k]:
            for x in range(q1 - 1, q0 - 1, -1):
                pos = _put_byte(buf, pos, seq_minus[query_text[x]], write)
        else:
            for x in range(q0, q1):
                pos = _put_byte(buf, pos, seq_plus[query_text[x]], write)
    else:
        pos = _put_byte(buf, pos, 42, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_byte(buf, pos, 42, write)
    pos = _put_byte(buf, pos, 9, write)
    edits = mismatches + gaps + unknowns[k]
    pos = _put_score_tags(buf, pos, as_tag, score[k], nm_tag, edits, write)
    if _md_ok(runs, first, last, target_text, start):
        pos = _put_byte(buf, pos, 9, write)
        pos = _put_text(buf, pos, md_tag, write)
        pos = _put_md(buf, pos, runs, first, last, target_text, start, unknown, write)
    pos = _put_byte(buf, pos, 9, write)
    pos = _put_text(buf, pos, de_tag, write)
    pos = _put_slice(buf, pos, de_text, de_offsets[de_index[k]], de_offsets[de_index[k] + 1] - 1,
                     write)
    return _put_byte(buf, pos, 10, write)


@njit(cache=True, parallel=True)
def _sam_lines(order, qn, qo, tn, to, qi, ti, ql, qs, qe, ts, te, minus, score, runs, ro, primary,
               mapq, ops, query_text, query_offsets, target_text, target_offsets, with_seq, seq_plus,
               seq_minus, de_text, de_offsets, de_index, as_tag, nm_tag, md_tag, de_tag, mates, unknown,
               unknowns):
    count = order.shape[0]
    empty = np.empty(0, np.uint8)
    ends = np.zeros(count + 1, np.int64)
    for x in prange(count):
        ends[x + 1] = _sam_row(empty, 0, order[x], False, qn, qo, tn, to, qi, ti, ql, qs, qe, ts, te,
                               minus, score, runs, ro, primary, mapq, ops, query_text, query_offsets,
                               target_text, target_offsets, with_seq, seq_plus, seq_minus, de_text,
                               de_offsets, de_index, as_tag, nm_tag, md_tag, de_tag, mates, unknown,
                               unknowns)
    ends = np.cumsum(ends)
    buf = np.empty(ends[count], np.uint8)
    for x in prange(count):
        _sam_row(buf, ends[x], order[x], True, qn, qo, tn, to, qi, ti, ql, qs, qe, ts, te, minus,
                 score, runs, ro, primary, mapq, ops, query_text, query_offsets, target_text,
                 target_offsets, with_seq, seq_plus, seq_minus, de_text, de_offsets, de_index,
                 as_tag, nm_tag, md_tag, de_tag, mates, unknown, unknowns)
    return buf


@njit(cache=True, parallel=True)
def _divergence_keys(runs, ro, unknowns):
    """Per row, ``events << 32 | total``: the numerator and denominator of its ``de:f`` value
    (:func:`_divergence_texts`)."""
    keys = np.empty(ro.shape[0] - 1, np.int64)
    for k in prange(ro.shape[0] - 1):
        matches, mismatches, _, opens, _ = _run_sums(runs, ro[k], ro[k + 1])
        keys[k] = (mismatches + unknowns[k] + opens) * (1 << 32) + matches + mismatches + opens
    return keys


def _divergence_texts(table: AlignmentTable, unknowns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``de:f`` value of every row as pysam writes it: ``(text, offsets, index of each row)``.

    The value is a 32-bit float of (mismatches + gap opens) / (matches + mismatches + gap
    opens), the ``unknowns`` of the matches (N against N) counted as mismatches; the distinct
    pairs of counts are few, so each is formatted once, by htslib itself (through a pysam
    record), and rows point at their text.
    """
    import pysam

    distinct, index = np.unique(_divergence_keys(table.runs, table.run_offsets, unknowns),
                                return_inverse=True)
    header = pysam.AlignmentHeader.from_dict({"SQ": [{"SN": "x", "LN": 1}]})  # a minimal record
    record = pysam.AlignedSegment(header)
    record.query_name, record.flag = "x", 4
    texts = []
    for value in distinct.tolist():
        events, total = value >> 32, value & 0xFFFFFFFF
        record.set_tags([("de", events / total if total else 0.0, "f")])
        texts.append(record.to_string().rsplit("de:f:", 1)[1])
    joined = Names.of(texts)
    return joined.data, joined.offsets, index.reshape(-1).astype(np.int64)


def sam_lines(table: AlignmentTable, query_text: np.ndarray, query_offsets: np.ndarray,
              target_text: np.ndarray, target_offsets: np.ndarray, dna: bool) -> np.ndarray:
    """SAM records of every row, coordinate-sorted, as :func:`gpualign_plugin.io.sam.write_alignments` writes them.

    Parameters
    ----------
    table : AlignmentTable
        The alignments, in the order that breaks ties of the sort (as the object
        writer's input order).
    query_text, target_text : numpy.ndarray
        ``uint8`` residues of every record as read (case kept), records back to back;
        ``query_offsets`` and ``target_offsets`` their boundaries (records as in the
        table's ``query_index`` and ``target_index``).
    dna : bool
        DNA: SEQ on primary records, and an N matched by an N counted in NM and MD as samtools
        calmd counts it (:data:`~gpualign_plugin.model.UNKNOWN_BASE`); protein: SEQ ``*``.

    Returns
    -------
    numpy.ndarray
        ``uint8`` text: the records sorted by target record, then start, then ``+`` before
        ``-``, then row.
    """
    t = table
    order = np.lexsort((np.arange(len(t)), t.minus, t.target_start, t.target_index))
    unknowns = unknown_counts(t, target_text, target_offsets, dna)
    de_text, de_offsets, de_index = _divergence_texts(t, unknowns)
    return _sam_lines(order, t.query_names.data, t.query_names.offsets, t.target_names.data,
                      t.target_names.offsets, t.query_index, t.target_index, t.query_length,
                      t.query_start, t.query_end, t.target_start, t.target_end, t.minus, t.score,
                      t.runs, t.run_offsets, t.primary, t.mapq, _OPS, query_text, query_offsets,
                      target_text, target_offsets, dna, _SEQ_PLUS, _SEQ_MINUS, de_text,
                      de_offsets, de_index, _AS, _NM, _SAM_MD, _SAM_DE, _SAM_MATES,
                      ord(UNKNOWN_BASE) if dna else 0, unknowns)


@njit(cache=True, nogil=True)
def _sq_row(buf, pos, k, write, names, offsets, lengths, prefix, middle):
    pos = _put_text(buf, pos, prefix, write)
    pos = _put_slice(buf, pos, names, offsets[k], offsets[k + 1] - 1, write)
    pos = _put_text(buf, pos, middle, write)
    pos = _put_int(buf, pos, lengths[k], write)
    return _put_byte(buf, pos, 10, write)


@njit(cache=True, parallel=True)
def _sq_lines(names, offsets, lengths, prefix, middle):
    count = lengths.shape[0]
    empty = np.empty(0, np.uint8)
    ends = np.zeros(count + 1, np.int64)
    for k in prange(count):
        ends[k + 1] = _sq_row(empty, 0, k, False, names, offsets, lengths, prefix, middle)
    ends = np.cumsum(ends)
    buf = np.empty(ends[count], np.uint8)
    for k in prange(count):
        _sq_row(buf, ends[k], k, True, names, offsets, lengths, prefix, middle)
    return buf


def sam_header_lines(names: Names, lengths: np.ndarray, command_line: str) -> list:
    """The sorted SAM header of these targets as :func:`gpualign_plugin.io.sam.header_text` writes it.

    Returns its parts (``bytes`` and ``uint8`` arrays) in order: the ``@HD`` line, one
    ``@SQ`` line per target (built by a parallel kernel), the ``@PG`` line.
    """
    from gpualign_plugin.io.sam import header_text

    hd, pg = header_text([], command_line).encode("utf-8").split(b"\n", 1)
    return [hd + b"\n", _sq_lines(names.data, names.offsets, np.asarray(lengths, dtype=np.int64),
                                  np.frombuffer(b"@SQ\tSN:", dtype=np.uint8),
                                  np.frombuffer(b"\tLN:", dtype=np.uint8)), pg]


def write_bytes(path: str | os.PathLike, *parts) -> None:
    """Write ``parts`` (``bytes`` or ``uint8`` arrays) to ``path`` atomically (temporary name, renamed when complete)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            for part in parts:
                handle.write(part)
