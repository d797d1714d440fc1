"""Where two placements of one contig meet on it: the junction moved to the best-scoring base.

Placement (:func:`gpualign_plugin.pairwise.api.place_local`) takes the best local alignment
of a contig first and then the best of each free part left beside it. At a junction the piece
taken first may reach a few columns into the bases the other piece would align better: a
home alignment that ends ``2I5=1X1=1X3=`` inside the inverted block next to it, say, because
those columns still score more than nothing. The other piece, found later on the free part
only, stops at the junction, and those columns became false SNPs and indels and an event some
bases too short (dnadiff's nucmer stops the first alignment where the second, better one
begins). :func:`settle_junctions` moves each junction to where the two pieces' scores sum
highest. After the events, :func:`close_seams` lets the report's alignments go on over seam
bases that match on both sides of a junction, overlapping on the contig as nucmer's do.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpualign_plugin.model import Alignment, Cigar, cigar_columns, column_ops, column_scores, score_cigar
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes
from gpualign_plugin.statistics import parameters_for

JUNCTION_REACH = 64
"""Columns a piece may give up at a junction, and contig bases between two pieces that a junction
may lie across (farther apart, the pieces are left as they are)."""


def settle_junctions(placements: list[Alignment], queries: list[Sequence], targets: list[Sequence],
                     scheme: ScoringScheme) -> list[Alignment]:
    """``placements`` with the junction of each two pieces that follow each other on a contig
    moved to where their scores sum highest.

    The primary and supplementary pieces of each contig are taken in contig order. For two
    that follow each other (at most :data:`JUNCTION_REACH` free contig bases between them),
    one piece gives up ``p`` columns at the junction (at most :data:`JUNCTION_REACH`, keeping a
    ``=`` column at its new edge) and the other goes on along its own diagonal, without gaps,
    over ``k`` of the contig bases freed or free, ending in a ``=`` column; the pair of ``p``
    and ``k`` that gains most (the extension's column scores minus those given up; the fewest
    columns among equals) is taken if it gains anything, either piece giving up. A tie keeps the
    pieces as placed. A changed piece gets its score, E-value and bit score again (its MAPQ stays).
    Secondary records and pieces on other contigs are returned unchanged; the order is kept.
    """
    by_query = {q.id: q for q in queries}
    by_target = {t.id: t for t in targets}
    pieces_of: dict[str, list[int]] = {}
    for index, piece in enumerate(placements):
        if piece.is_primary or piece.is_supplementary:
            pieces_of.setdefault(piece.query_id, []).append(index)
    settled = list(placements)
    parameters = None
    database = (sum(len(t) for t in targets), len(targets))
    for query_id, indexes in pieces_of.items():
        query = by_query[query_id].codes
        indexes.sort(key=lambda k: (settled[k].query_start, settled[k].query_end))
        for left_index, right_index in zip(indexes, indexes[1:]):
            left, right = settled[left_index], settled[right_index]
            free = right.query_start - left.query_end
            if not 0 <= free <= JUNCTION_REACH:
                continue
            moved = _best_junction(left, right, free, query, by_target, scheme)
            if moved is None:
                continue
            if parameters is None:
                parameters = parameters_for(scheme)
            for index, piece in zip((left_index, right_index), moved):
                if piece is not settled[index]:
                    settled[index] = replace(piece, evalue=parameters.evalue(piece.score, len(query), *database,
                                                                              piece.target_length),
                                             bit_score=parameters.bit_score(piece.score))
    return settled


def _best_junction(left: Alignment, right: Alignment, free: int, query: np.ndarray, targets: dict,
                   scheme: ScoringScheme) -> tuple[Alignment, Alignment] | None:
    """The two pieces with their junction moved (:func:`settle_junctions`), or None when no move
    gains anything. ``left`` ends ``free`` contig bases before ``right`` starts."""
    best = (0, 0, None)  # gain, columns changed, (giving piece's side, p, k)
    for giver_is_left in (True, False):
        giver, taker = (left, right) if giver_is_left else (right, left)
        ops, scores = _edge_columns(giver, "right" if giver_is_left else "left", query, targets, scheme)
        n = min(JUNCTION_REACH, len(ops) - 1)
        freed = np.concatenate(([0], np.cumsum(ops[:n] != ord("D"))))
        lost = np.concatenate(([0], np.cumsum(scores[:n])))
        reach = free + int(freed[n])
        gained = np.concatenate(([0], np.cumsum(_extension_scores(
            taker, "left" if giver_is_left else "right", reach, query, targets, scheme))))
        for p in range(n + 1):
            if p and ops[p] != ord("="):
                continue
            k = int(np.argmax(gained[:min(len(gained), free + int(freed[p]) + 1)]))
            gain = int(gained[k] - lost[p])
            if gain > best[0] or (gain == best[0] and best[2] is not None and p + k < best[1]):
                best = (gain, p + k, (giver_is_left, p, k))
    if best[2] is None:
        return None
    giver_is_left, p, k = best[2]
    if giver_is_left:
        return _cut(left, "right", p, query, targets, scheme), _extend(right, "left", k, query, targets, scheme)
    return _extend(left, "right", k, query, targets, scheme), _cut(right, "left", p, query, targets, scheme)


def _reads_from_start(piece: Alignment, side: str) -> bool:
    """Whether the contig's ``side`` (``'left'``: toward its start) of ``piece`` is where its
    CIGAR begins (the CIGAR runs along the reference; a minus-strand piece reads the contig
    backward)."""
    return (piece.strand == "+") == (side == "left")


def _oriented(piece: Alignment, query: np.ndarray) -> np.ndarray:
    """The contig bases ``piece`` aligns, as its CIGAR reads them (reverse complemented on ``-``)."""
    bases = query[piece.query_start:piece.query_end]
    return reverse_complement_codes(bases) if piece.strand == "-" else bases


def _edge_columns(piece: Alignment, side: str, query: np.ndarray, targets: dict,
                  scheme: ScoringScheme) -> tuple[np.ndarray, np.ndarray]:
    """The operations and scores of ``piece``'s columns read from its contig ``side`` inward."""
    ops = column_ops(piece.cigar)
    scores = column_scores(piece.cigar, _oriented(piece, query),
                           targets[piece.target_id].codes[piece.target_start:piece.target_end], scheme)
    return (ops, scores) if _reads_from_start(piece, side) else (ops[::-1], scores[::-1])


def _outward_pairs(piece: Alignment, side: str, count: int, query: np.ndarray,
                   targets: dict) -> tuple[np.ndarray, np.ndarray]:
    """The contig bases (as ``piece`` reads them) and reference bases of up to ``count``
    ungapped columns beyond ``piece``'s contig ``side``, nearest first, as far as both
    sequences go."""
    target = targets[piece.target_id].codes
    if side == "left":
        contig = query[max(0, piece.query_start - count):piece.query_start][::-1]
    else:
        contig = query[piece.query_end:piece.query_end + count]
    if piece.strand == "-":
        contig = reverse_complement_codes(contig)[::-1]
    if _reads_from_start(piece, side):
        reference = target[max(0, piece.target_start - len(contig)):piece.target_start][::-1]
    else:
        reference = target[piece.target_end:piece.target_end + len(contig)]
    return contig[:len(reference)], reference


def _extension_scores(piece: Alignment, side: str, count: int, query: np.ndarray, targets: dict,
                      scheme: ScoringScheme) -> np.ndarray:
    """Scores of the ungapped columns :func:`_outward_pairs` gives, nearest first."""
    contig, reference = _outward_pairs(piece, side, count, query, targets)
    return scheme.matrix[contig, reference].astype(np.int64)


def _cut(piece: Alignment, side: str, columns: int, query: np.ndarray, targets: dict,
         scheme: ScoringScheme) -> Alignment:
    """``piece`` without its ``columns`` columns at its contig ``side``."""
    if not columns:
        return piece
    total = len(column_ops(piece.cigar))
    start, end = (columns, total) if _reads_from_start(piece, side) else (0, total - columns)
    cigar, query_before, target_before = cigar_columns(piece.cigar, start, end)
    query_used, target_used = cigar.query_length(), cigar.target_length()
    target_start = piece.target_start + target_before
    oriented_start = query_before  # in the piece's own reading of the contig
    if piece.strand == "+":
        query_start = piece.query_start + oriented_start
    else:
        query_start = piece.query_end - oriented_start - query_used
    return _rescored(piece, cigar, query_start, query_start + query_used, target_start,
                     target_start + target_used, query, targets, scheme)


def _extend(piece: Alignment, side: str, columns: int, query: np.ndarray, targets: dict,
            scheme: ScoringScheme) -> Alignment:
    """``piece`` with ``columns`` more ungapped columns beyond its contig ``side``."""
    if not columns:
        return piece
    contig, reference = _outward_pairs(piece, side, columns, query, targets)
    extra = "".join("=" if a == b else "X" for a, b in zip(contig.tolist(), reference.tolist()))
    at_start = _reads_from_start(piece, side)
    runs = Cigar.from_ops(extra[::-1] if at_start else extra).runs
    cigar = Cigar.from_runs((*runs, *piece.cigar.runs) if at_start else (*piece.cigar.runs, *runs))
    query_start, query_end = ((piece.query_start - columns, piece.query_end) if side == "left"
                              else (piece.query_start, piece.query_end + columns))
    target_start, target_end = ((piece.target_start - columns, piece.target_end) if at_start
                                else (piece.target_start, piece.target_end + columns))
    return _rescored(piece, cigar, query_start, query_end, target_start, target_end, query, targets, scheme)


def _rescored(piece: Alignment, cigar: Cigar, query_start: int, query_end: int, target_start: int,
              target_end: int, query: np.ndarray, targets: dict, scheme: ScoringScheme) -> Alignment:
    """``piece`` with new coordinates and CIGAR, and the score they give."""
    moved = replace(piece, query_start=query_start, query_end=query_end, target_start=target_start,
                    target_end=target_end, cigar=cigar)
    return replace(moved, score=score_cigar(cigar, _oriented(moved, query),
                                            targets[piece.target_id].codes[target_start:target_end], scheme))


def close_seams(blocks: list, covering: list, queries: dict, targets: dict) -> list:
    """``blocks`` (:class:`~gpualign_plugin.compare.api.AlignedBlock`) each extended at its ends
    over identical bases (A, C, G, T) whose reference bases no alignment covers and whose contig
    bases another block covers, as nucmer's extension goes on there.

    Where two blocks of a contig meet at a junction (a moved, inverted or translocated block, a
    deletion's edges), the bases at the seam may read as matches on both sides. The placement
    found first takes the contig bases, and the reference bases that pair with them on the
    other side were aligned by nothing: a moved block's seam base was a one-base ``Insertions``
    row and one ``AlignedBases`` less than dnadiff, and a deletion or translocation edge with a
    few bases of microhomology 1 to 3 ``AlignedBases`` less. nucmer's alignments overlap on the
    contig there; so do these now (the events and the VCF, made before, are unchanged).
    ``covering`` alignments (the repeat copies) count as covering the reference too. Blocks are
    taken in the order given, and reference bases one takes are covered for the next.
    ``queries`` and ``targets`` map ids to sequences.
    """
    aligned = {t: np.zeros(len(s), dtype=bool) for t, s in targets.items()}
    for b in list(blocks) + list(covering):
        aligned[b.target_id][b.target_start:b.target_end] = True
    bare = {q: np.ones(len(s), dtype=bool) for q, s in queries.items()}  # contig bases no block covers
    for b in blocks:
        bare[b.query_id][b.query_start:b.query_end] = False
    closed = list(blocks)
    for k, b in enumerate(blocks):
        mask = aligned[b.target_id]
        grown = grown_block(b, queries[b.query_id].codes, targets[b.target_id].codes, blocked=bare[b.query_id],
                            target_blocked=mask)
        if grown is not b:
            mask[grown.target_start:grown.target_end] = True
            closed[k] = grown
    return closed


def grown_block(block, contig: np.ndarray, reference: np.ndarray, *, blocked: np.ndarray,
                target_blocked: np.ndarray | None = None):
    """``block`` (an :class:`~gpualign_plugin.compare.api.AlignedBlock`) extended at both ends
    over the identical bases (A, C, G, T) that continue its diagonal (:func:`_identical_run`,
    stopping at contig positions ``blocked`` marks and reference positions ``target_blocked``
    marks), or ``block`` itself when there are none."""
    forward = block.strand == "+"
    # The reference's next bases pair with the contig's next ones on +, its previous ones on -.
    after = _identical_run(contig, *((block.query_end, 1) if forward else (block.query_start - 1, -1)), reference,
                           block.target_end, 1, complement=not forward, blocked=blocked,
                           target_blocked=target_blocked)
    before = _identical_run(contig, *((block.query_start - 1, -1) if forward else (block.query_end, 1)), reference,
                            block.target_start - 1, -1, complement=not forward, blocked=blocked,
                            target_blocked=target_blocked)
    if not (before or after):
        return block
    query_start, query_end = ((block.query_start - before, block.query_end + after) if forward
                              else (block.query_start - after, block.query_end + before))
    return replace(block, query_start=query_start, query_end=query_end, target_start=block.target_start - before,
                   target_end=block.target_end + after,
                   cigar=Cigar.from_runs(((before, "="), *block.cigar.runs, (after, "="))))


def _identical_run(query: np.ndarray, q: int, q_step: int, target: np.ndarray, t: int, t_step: int, *,
                   complement: bool, blocked: np.ndarray, target_blocked: np.ndarray | None) -> int:
    """How many pairs ``(q + i q_step, t + i t_step)``, ``i = 0, 1, ...``, are identical bases
    (A, C, G, T; the contig's complemented when ``complement``) inside both sequences, stopping
    at a contig position that ``blocked`` marks or a reference position that ``target_blocked``
    marks."""
    n = 0
    while 0 <= q < len(query) and 0 <= t < len(target) and query[q] < 4 and not blocked[q] \
            and (target_blocked is None or not target_blocked[t]) \
            and (3 - query[q] if complement else query[q]) == target[t]:
        n, q, t = n + 1, q + q_step, t + t_step
    return n
