"""Independent reference implementations the engines are tested against.

Plain Python on purpose: full matrices in lists, no numpy tricks, no shared code
with the engines, so that a bug in an engine cannot hide in the oracle too.
"""

from __future__ import annotations

import math
import re

from Bio import Align
from Bio.Align import substitution_matrices

NEG = float("-inf")


def gotoh_matrices(query, target, matrix, gap_open, gap_extend, mode):
    """The ``H``, ``E`` and ``F`` matrices (lists of rows, ``(m + 1) x (n + 1)``) of
    docs/ALGORITHMS.md's recurrence with ``mode``'s boundaries; minus infinity is ``NEG``."""
    a = [int(x) for x in query]
    b = [int(x) for x in target]
    m, n = len(a), len(b)
    o, e = gap_open, gap_extend
    H = [[NEG] * (n + 1) for _ in range(m + 1)]
    E = [[NEG] * (n + 1) for _ in range(m + 1)]
    F = [[NEG] * (n + 1) for _ in range(m + 1)]
    H[0][0] = 0
    for j in range(1, n + 1):
        if mode == "global":
            H[0][j] = E[0][j] = -(o + j * e)
        else:
            H[0][j] = 0
    for i in range(1, m + 1):
        if mode == "local":
            H[i][0] = 0
        else:
            H[i][0] = F[i][0] = -(o + i * e)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i][j] = max(H[i][j - 1] - o - e, E[i][j - 1] - e)
            F[i][j] = max(H[i - 1][j] - o - e, F[i - 1][j] - e)
            candidates = [H[i - 1][j - 1] + int(matrix[a[i - 1]][b[j - 1]]), E[i][j], F[i][j]]
            if mode == "local":
                candidates.append(0)
            H[i][j] = max(candidates)
    return H, E, F


def gotoh(query, target, matrix, gap_open, gap_extend, mode):
    """Gotoh alignment following docs/ALGORITHMS.md ("Pairwise") literally.

    Parameters
    ----------
    query, target : sequence of int
        Residue codes (rows ``i`` and columns ``j``).
    matrix : 2-D indexable of int
        Substitution scores by code.
    gap_open, gap_extend : int
        A gap of length ``k`` costs ``gap_open + k * gap_extend``.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.

    Returns
    -------
    tuple
        ``(score, query_start, query_end, target_start, target_end, cigar_string)``;
        local with no positive cell gives ``(0, 0, 0, 0, 0, '')``.
    """
    a = [int(x) for x in query]
    b = [int(x) for x in target]
    m, n = len(a), len(b)
    o, e = gap_open, gap_extend
    local = mode == "local"
    H, E, F = gotoh_matrices(query, target, matrix, gap_open, gap_extend, mode)

    def s(i, j):
        return int(matrix[a[i - 1]][b[j - 1]])

    if mode == "local":
        best, end = 0, None
        for i in range(1, m + 1):
            for j in range(1, n + 1):
                if H[i][j] > best:
                    best, end = H[i][j], (i, j)
        if end is None:
            return 0, 0, 0, 0, 0, ""
    elif mode == "global":
        end = (m, n)
    else:
        end = (m, 0)
        for j in range(1, n + 1):
            if H[m][j] > H[end[0]][end[1]]:
                end = (m, j)

    i, j = end
    state = "H"
    ops = []
    while True:
        if state == "H":
            if (local and H[i][j] == 0) or (mode == "global" and i == 0 and j == 0) or \
                    (mode == "semiglobal" and i == 0):
                break
            if i >= 1 and j >= 1 and H[i][j] == H[i - 1][j - 1] + s(i, j):
                ops.append("=" if a[i - 1] == b[j - 1] else "X")
                i, j = i - 1, j - 1
            elif H[i][j] == E[i][j]:
                state = "E"
            else:
                assert H[i][j] == F[i][j]
                state = "F"
        elif state == "E":
            ops.append("D")
            state = "H" if E[i][j] == H[i][j - 1] - o - e else "E"
            j -= 1
        else:
            ops.append("I")
            state = "H" if F[i][j] == H[i - 1][j] - o - e else "F"
            i -= 1
    ops.reverse()
    runs = []
    for op in ops:
        if runs and runs[-1][1] == op:
            runs[-1][0] += 1
        else:
            runs.append([1, op])
    cigar = "".join(f"{count}{op}" for count, op in runs)
    return int(H[end[0]][end[1]]), i, end[0], j, end[1], cigar


def biopython_aligner(scheme, mode):
    """A Biopython ``PairwiseAligner`` scoring exactly like gpualign's ``mode``.

    Call it as ``aligner.score(target_text, query_text)``: Biopython names its
    first sequence the target and its second the query, as gpualign does.
    Settings: the scheme's matrix as ``substitution_matrix`` (over the
    alphabet's letters); ``open_gap_score = -(open + extend)`` and
    ``extend_gap_score = -extend`` (a gap of ``k`` costs ``open + k*extend``);
    ``mode='local'`` for local, ``'global'`` otherwise; for semiglobal, end gaps
    in the query (target residues against gaps at either end, Biopython's end
    "deletions") score 0 while end gaps in the target keep their cost.
    """
    aligner = Align.PairwiseAligner()
    letters = scheme.alphabet.letters
    aligner.substitution_matrix = substitution_matrices.Array(
        alphabet=letters, dims=2, data=scheme.matrix.astype(float))
    aligner.open_gap_score = -(scheme.gap_open + scheme.gap_extend)
    aligner.extend_gap_score = -scheme.gap_extend
    aligner.mode = "local" if mode == "local" else "global"
    if mode == "semiglobal":
        # Renamed in Biopython 1.86: query end gaps are end deletions.
        name = "end_deletion_score" if hasattr(type(aligner), "end_deletion_score") else \
            "query_end_gap_score"
        setattr(aligner, name, 0)
    return aligner


def _column_scores(cigar, query, target, matrix, gap_open, gap_extend):
    """One score per column of a CIGAR string over the aligned residues (a gap run's first
    column costs open + extend, the others extend)."""
    scores, qi, ti = [], 0, 0
    for count, op in re.findall(r"(\d+)([=XID])", cigar):
        for k in range(int(count)):
            if op in "=X":
                scores.append(int(matrix[query[qi]][target[ti]]))
                qi, ti = qi + 1, ti + 1
            else:
                scores.append(-(gap_open + gap_extend) if k == 0 else -gap_extend)
                if op == "I":
                    qi += 1
                else:
                    ti += 1
    return scores


def _zdrop_piece(scores, zdrop):
    """docs/ALGORITHMS.md "Local placement", Z-drop: (start, end, score) of the column range kept."""
    pieces = []
    low, high = 0, len(scores)
    while high > low:
        running, peak, peak_at, dropped = 0, 0, None, False
        for k in range(low, high):
            running += scores[k]
            if running > peak:
                peak, peak_at = running, k
            elif peak - running > zdrop:
                dropped = True
                break
        if not dropped:
            pieces.append((low, high, running))
            break
        pieces.append((low, peak_at + 1, peak))
        best = None  # (sum, -end, start): the largest sum, then earliest end, then latest start
        for start in range(peak_at + 1, high):
            total = 0
            for end in range(start + 1, high + 1):
                total += scores[end - 1]
                key = (total, -end, start)
                if best is None or key > best:
                    best = key
        if best is None or best[0] <= 0:
            break
        low, high = best[2], -best[1]
    kept = pieces[0]
    for piece in pieces[1:]:
        if piece[2] > kept[2]:
            kept = piece
    return kept


def _cut_local(query_text, target_text, scheme, zdrop):
    """Oracle local alignment of two texts, Z-drop cut: (score, qs, qe, ts, te, cigar) or None."""
    q = [int(c) for c in scheme.alphabet.encode(query_text)]
    t = [int(c) for c in scheme.alphabet.encode(target_text)]
    score, qs, qe, ts, te, cigar = gotoh(q, t, scheme.matrix, scheme.gap_open, scheme.gap_extend,
                                         "local")
    if score <= 0:
        return None
    ops = "".join(op * int(n) for n, op in re.findall(r"(\d+)([=XID])", cigar))
    scores = _column_scores(cigar, q[qs:qe], t[ts:te], scheme.matrix, scheme.gap_open,
                            scheme.gap_extend)
    start, end, kept = _zdrop_piece(scores, zdrop)
    before, inside = ops[:start], ops[start:end]
    qs += sum(op != "D" for op in before)
    ts += sum(op != "I" for op in before)
    return (kept, qs, qs + sum(op != "D" for op in inside), ts, ts + sum(op != "I" for op in inside),
            "".join(f"{len(m.group(0))}{m.group(1)}" for m in re.finditer(r"(.)\1*", inside)))


def dust_mask(text, window=64, level=20):
    """Low-complexity bases by symmetric DUST (gpualign_plugin/pairwise/low_complexity.py),
    literally and without its two bounds: along each A/C/G/T run, at each triplet, every
    interval of triplets ending there within the last ``window`` bases, shortest first, is
    perfect when 10 r > level l (r: sum over its triplets of c (c - 1) / 2; l: triplets - 1) and
    its score r / l is at least that of every perfect interval found so far that starts inside
    it; the bases of perfect intervals are masked."""
    text = text.upper()
    mask = [False] * len(text)
    run_start = 0
    while run_start < len(text):
        run_end = run_start
        while run_end < len(text) and text[run_end] in "ACGT":
            run_end += 1
        words = [text[k:k + 3] for k in range(run_start, run_end - 2)]
        perfect = []  # (start, r, l) of the perfect intervals found, triplet indexes
        for end in range(len(words)):
            counts, r = {}, 0
            for start in range(end, max(-1, end - (window - 2)), -1):
                r += counts.get(words[start], 0)
                counts[words[start]] = counts.get(words[start], 0) + 1
                length = end - start
                if 10 * r <= level * length:
                    continue
                inside = [(pr, pl) for ps, pr, pl in perfect if ps >= start and ps > end - (window - 2)]
                if all(r * pl >= pr * length for pr, pl in inside):
                    perfect.append((start, r, length))
                    for k in range(run_start + start, run_start + end + 3):
                        mask[k] = True
        run_start = max(run_end, run_start + 1)
    return mask


def _counted_score(text, mask, target_text, piece, scheme):
    """A piece's score over its columns whose query base is not masked (gap columns without a
    query base count)."""
    _, qs, qe, ts, te, strand, _, cigar = piece
    complement = str.maketrans("ACGTacgt", "TGCAtgca")
    query = text[qs:qe] if strand == "+" else text[qs:qe].translate(complement)[::-1]
    q = [int(c) for c in scheme.alphabet.encode(query)]
    t = [int(c) for c in scheme.alphabet.encode(target_text[ts:te])]
    scores = _column_scores(cigar, q, t, scheme.matrix, scheme.gap_open, scheme.gap_extend)
    total, offset = 0, 0
    for score, op in zip(scores, "".join(op * int(n) for n, op in re.findall(r"(\d+)([=XID])", cigar))):
        forward = qs + offset if strand == "+" else qe - 1 - offset
        if op == "D" or not mask[forward]:
            total += score
        offset += op != "D"
    return total


def local_placement(queries, targets, scheme, parameters, evalue, zdrop, strands=("+", "-")):
    """docs/ALGORITHMS.md "Local placement", literally: plain loops over segments, targets and strands
    (DNA: a piece or secondary is reported only if significant over its columns outside
    :func:`dust_mask`).

    ``queries`` and ``targets`` are lists of ``(id, text)``. Returns one tuple per record:
    ``(query, target, qs, qe, ts, te, strand, score, cigar, primary, supplementary, mapq)``.
    """
    residues = (sum(len(text) for _, text in targets), len(targets))
    complement = str.maketrans("ACGTacgt", "TGCAtgca")

    def oriented(text, q0, q1, strand):
        piece = text[q0:q1]
        return piece.translate(complement)[::-1] if strand == "-" else piece

    records = []
    for query_id, text in queries:
        m = len(text)

        def significant(score, t_index):
            n = len(targets[t_index][1])
            return score > 0 and parameters.evalue(score, m, *residues, n) <= evalue

        def solve(q0, q1, strand, t_index, t0, t1):
            found = _cut_local(oriented(text, q0, q1, strand), targets[t_index][1][t0:t1], scheme,
                               zdrop)
            if found is None:
                return None
            score, qs, qe, ts, te, cigar = found
            if strand == "-":
                qs, qe = q1 - qe, q1 - qs
            else:
                qs, qe = q0 + qs, q0 + qe
            return (score, qs, qe, t0 + ts, t0 + te, strand, t_index, cigar)

        mask = dust_mask(text) if scheme.is_dna else [False] * m

        def reported(found):
            return significant(_counted_score(text, mask, targets[found[6]][1], found, scheme), found[6])

        free, pieces = [(0, m)], []
        while True:
            best = None
            for q0, q1 in free:
                for t_index in range(len(targets)):
                    for strand in strands:
                        found = solve(q0, q1, strand, t_index, 0, len(targets[t_index][1]))
                        if found is None:
                            continue
                        key = (-found[0], t_index, strand == "-", q0)
                        if best is None or key < best[0]:
                            best = (key, found, (q0, q1))
            if best is None or not significant(best[1][0], best[1][6]):
                break
            found, (q0, q1) = best[1], best[2]
            if reported(found):  # else its query interval is taken, unreported
                pieces.append(found)
            free.remove((q0, q1))
            free += [(a, b) for a, b in ((q0, found[1]), (found[2], q1)) if b > a]
            free.sort()
        ranked = sorted(range(len(pieces)), key=lambda k: (-pieces[k][0], k))
        mine, secondaries = [], []
        for rank, k in enumerate(ranked):
            score, qs, qe, ts, te, strand, t_index, cigar = pieces[k]
            second, where = 0, None
            for other in range(len(targets)):
                n = len(targets[other][1])
                for other_strand in strands:
                    spans = [(0, ts), (te, n)] if (other, other_strand) == (t_index, strand) \
                        else [(0, n)]
                    for t0, t1 in spans:
                        if t1 <= t0:
                            continue
                        found = _cut_local(oriented(text, qs, qe, other_strand),
                                           targets[other][1][t0:t1], scheme, math.inf)
                        if found is not None and found[0] > second:
                            second, where = found[0], (other_strand, other, t0, t1)
            if second >= score:
                mapq = 0
            else:
                rival = second if where is not None and significant(second, where[1]) else 0
                mapq = min(60, 60 * (score - rival) // score)
            mine.append((query_id, targets[t_index][0], qs, qe, ts, te, strand, score, cigar, True,
                         rank > 0, mapq))
            if where is not None and second >= 0.8 * score:
                found = solve(qs, qe, *where)
                if found is not None and significant(found[0], found[6]) and reported(found):
                    s2, a, b, c, d, st, ti, cg = found
                    secondaries.append((query_id, targets[ti][0], a, b, c, d, st, s2, cg, False,
                                        False, 0))
        records += mine + secondaries
    return records


RNA_PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


def nussinov(text, min_loop):
    """Textbook Nussinov (four cases: i unpaired, j unpaired, (i, j) paired, bifurcation).

    Returns the table ``best[i][j]`` (0-based, inclusive; 0 where ``j <= i``).
    """
    s = text.upper().replace("T", "U")
    n = len(s)
    best = [[0] * (n + 1) for _ in range(n + 1)]
    for span in range(1, n):
        for i in range(n - span):
            j = i + span
            value = max(best[i + 1][j], best[i][j - 1])
            if (s[i], s[j]) in RNA_PAIRS and j - i - 1 >= min_loop:
                value = max(value, (best[i + 1][j - 1] if i + 1 <= j - 1 else 0) + 1)
            for k in range(i + 1, j):
                value = max(value, best[i][k] + best[k + 1][j])
            best[i][j] = value
    return best


def traceback_by_rule(text, min_loop):
    """The pairs the traceback written in docs/ALGORITHMS.md picks over :func:`nussinov`'s table, sorted."""
    s = text.upper().replace("T", "U")
    best = nussinov(text, min_loop)

    def value(i, j):
        return best[i][j] if i < j else 0

    pairs, stack = [], [(0, len(s) - 1)]
    while stack:
        i, j = stack.pop()
        if i >= j or value(i, j) == 0:
            continue
        if (s[i], s[j]) in RNA_PAIRS and j - i - 1 >= min_loop and value(i, j) == value(i + 1, j - 1) + 1:
            pairs.append((i, j))
            stack.append((i + 1, j - 1))
            continue
        k = next(k for k in range(i, j) if value(i, k) + value(k + 1, j) == value(i, j))
        stack += [(k + 1, j), (i, k)]
    return tuple(sorted(pairs))
