"""Independent reference implementations the engines are tested against.

Plain Python on purpose: full matrices in lists, no numpy tricks, no shared code
with the engines, so that a bug in an engine cannot hide in the oracle too.
"""

from __future__ import annotations

from Bio import Align
from Bio.Align import substitution_matrices

NEG = float("-inf")


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

    def s(i, j):
        return int(matrix[a[i - 1]][b[j - 1]])

    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i][j] = max(H[i][j - 1] - o - e, E[i][j - 1] - e)
            F[i][j] = max(H[i - 1][j] - o - e, F[i - 1][j] - e)
            candidates = [H[i - 1][j - 1] + s(i, j), E[i][j], F[i][j]]
            if local:
                candidates.append(0)
            H[i][j] = max(candidates)

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
