"""Junctions of two placements of one contig (``compare.junctions.settle_junctions``) against a
plain-Python oracle that tries every junction."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from gpualign_plugin.compare.api import place_contigs
from gpualign_plugin.compare.junctions import JUNCTION_REACH, settle_junctions
from gpualign_plugin.model import Cigar, score_cigar
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes, reverse_complement_text

SCHEME = ScoringScheme.dna()


def oriented_interval(piece, m: int) -> tuple[int, int]:
    """The piece's contig interval in its own reading (the reverse complement on ``-``)."""
    return (piece.query_start, piece.query_end) if piece.strand == "+" else (m - piece.query_end, m - piece.query_start)


def oracle_score(piece, ops: str, oriented_start: int, target_start: int, contig, target) -> int | None:
    """Score of the path ``ops`` from oriented contig base ``oriented_start`` and reference base
    ``target_start`` (None where it leaves a sequence)."""
    oriented = contig if piece.strand == "+" else reverse_complement_codes(contig)
    used_query = sum(op != "D" for op in ops)
    used_target = sum(op != "I" for op in ops)
    if oriented_start < 0 or target_start < 0 or oriented_start + used_query > len(oriented) \
            or target_start + used_target > len(target):
        return None
    query = oriented[oriented_start:oriented_start + used_query]
    reference = target[target_start:target_start + used_target]
    fixed = []  # the oracle writes = or X itself from the residues
    qi = ti = 0
    for op in ops:
        if op in "=X":
            fixed.append("=" if query[qi] == reference[ti] else "X")
            qi, ti = qi + 1, ti + 1
        else:
            fixed.append(op)
            qi, ti = qi + (op == "I"), ti + (op == "D")
    return score_cigar(Cigar.from_ops("".join(fixed)), query, reference, SCHEME)


def best_total(left, right, contig, target_of) -> int:
    """The highest sum of the two pieces' scores over every junction settle_junctions may choose,
    tried one by one: one piece gives up p edge columns (keeping = at its new edge), the other
    extends k ungapped columns over freed or free contig bases."""
    m = len(contig)
    free = right.query_start - left.query_end
    best = left.score + right.score
    for giver, taker, giver_side in ((left, right, "right"), (right, left, "left")):
        ops = "".join(op * n for n, op in giver.cigar.runs)
        o_start, _ = oriented_interval(giver, m)
        # the giver's contig side is at its CIGAR's end when (+, right) or (-, left)
        at_end = (giver.strand == "+") == (giver_side == "right")
        for p in range(0, min(JUNCTION_REACH, len(ops) - 1) + 1):
            kept = ops[:len(ops) - p] if at_end else ops[p:]
            if p and kept[-1 if at_end else 0] != "=":
                continue
            cut = ops[len(ops) - p:] if at_end else ops[:p]
            freed = sum(op != "D" for op in cut)
            cut_target = sum(op != "I" for op in cut)
            giver_score = oracle_score(giver, kept, o_start if at_end else o_start + freed,
                                       giver.target_start if at_end else giver.target_start + cut_target,
                                       contig, target_of[giver.target_id])
            taker_ops = "".join(op * n for n, op in taker.cigar.runs)
            t_start, _ = oriented_interval(taker, m)
            taker_at_end = (taker.strand == "+") == (giver_side == "left")  # taker extends toward the giver
            for k in range(0, free + freed + 1):
                if taker_at_end:
                    score = oracle_score(taker, taker_ops + "=" * k, t_start, taker.target_start, contig,
                                         target_of[taker.target_id])
                else:
                    score = oracle_score(taker, "=" * k + taker_ops, t_start - k, taker.target_start - k, contig,
                                         target_of[taker.target_id])
                if score is not None:
                    best = max(best, giver_score + score)
    return best


def junction_case(seed: int) -> tuple[str, str]:
    """A random reference and a contig of 400 of its bases followed by 150 inverted bases, the
    first few of which also read as the forward continuation with some mismatches (as at a real
    inversion's edge, where a flank's alignment reaches in)."""
    rng = random.Random(seed)
    bases = [rng.choice("ACGT") for _ in range(1200)]
    edge = rng.randint(2, 12)
    for i in range(edge):  # the inverted block's first bases: forward continuation, mostly
        if rng.random() < 0.75:
            bases[1000 - 1 - i] = {"A": "T", "C": "G", "G": "C", "T": "A"}[bases[400 + i]]
    reference = "".join(bases)
    contig = reference[:400] + reverse_complement_text(reference[850:1000])
    return reference, (reverse_complement_text(contig) if seed % 2 else contig)


@pytest.mark.parametrize("seed", range(40))
def test_the_settled_junction_gives_the_highest_score_sum_any_junction_gives(seed):
    reference, contig_text = junction_case(seed)
    target = SCHEME.encode("ref", reference)
    contig = SCHEME.encode("c", contig_text)
    placed = place_contigs([contig], [target], SCHEME)
    pieces = sorted((p for p in placed if p.is_primary or p.is_supplementary), key=lambda p: p.query_start)
    settled = settle_junctions(placed, [contig], [target], SCHEME)
    assert len(settled) == len(placed)
    if len(pieces) != 2 or not 0 <= pieces[1].query_start - pieces[0].query_end <= JUNCTION_REACH:
        assert settled == placed
        return
    after = sorted((p for p in settled if p.is_primary or p.is_supplementary), key=lambda p: p.query_start)
    for piece in after:
        o_start, o_end = oriented_interval(piece, len(contig))
        assert piece.cigar.query_length() == o_end - o_start
        assert piece.cigar.target_length() == piece.target_end - piece.target_start
        ops = "".join(op * n for n, op in piece.cigar.runs)
        assert piece.score == oracle_score(piece, ops, o_start, piece.target_start, contig.codes, target.codes)
    assert after[0].query_end <= after[1].query_start
    best = best_total(*pieces, contig.codes, {"ref": target.codes})
    assert after[0].score + after[1].score == best
    if best == pieces[0].score + pieces[1].score:
        assert after == pieces


def test_settling_moves_some_junctions():
    """The random cases above are not all ties: the flank reaches into the inverted block in some."""
    moved = 0
    for seed in range(40):
        reference, contig_text = junction_case(seed)
        target, contig = SCHEME.encode("ref", reference), SCHEME.encode("c", contig_text)
        placed = place_contigs([contig], [target], SCHEME)
        moved += settle_junctions(placed, [contig], [target], SCHEME) != placed
    assert moved >= 5


def seam_case(gap: int, strand: str, spoil: bool = False):
    """Two blocks of a contig against a reference of 60 random bases: contig bases [0, 20) on
    reference [0, 20) and the rest on reference [20 + gap, 60), the ``gap`` reference bases
    between them equal to the second block's first contig bases (so the first block can go on
    over them); ``spoil`` changes the last of those contig bases (and its partner in the second
    block, which stays exact). ``strand`` ``-``: the contig is the reverse complement."""
    from gpualign_plugin.compare.api import AlignedBlock

    rng = random.Random(gap)
    head = [rng.choice("ACGT") for _ in range(20 + gap)]
    tail = head[20:] + [rng.choice("ACGT") for _ in range(40 - 2 * gap)]  # starts with the gap's bases
    if spoil:
        tail[gap - 1] = {"A": "C", "C": "G", "G": "T", "T": "A"}[tail[gap - 1]]
    reference, contig = "".join(head + tail), "".join(head[:20] + tail)
    m = len(contig)
    if strand == "+":
        blocks = [AlignedBlock("R1", "c", "ref", "+", 0, 20, 0, 20, Cigar.from_runs([(20, "=")])),
                  AlignedBlock("R2", "c", "ref", "+", 20, m, 20 + gap, 60, Cigar.from_runs([(m - 20, "=")]))]
    else:
        contig = reverse_complement_text(contig)
        blocks = [AlignedBlock("R1", "c", "ref", "-", m - 20, m, 0, 20, Cigar.from_runs([(20, "=")])),
                  AlignedBlock("R2", "c", "ref", "-", 0, m - 20, 20 + gap, 60, Cigar.from_runs([(m - 20, "=")]))]
    return blocks, {"c": SCHEME.encode("c", contig)}, {"ref": SCHEME.encode("ref", reference)}


@pytest.mark.parametrize("strand", ["+", "-"])
@pytest.mark.parametrize("gap", [1, 2, 5])
def test_a_reference_gap_at_a_seam_is_closed_by_the_block_that_reads_on_over_it(gap, strand):
    from gpualign_plugin.compare.junctions import close_seams

    blocks, queries, targets = seam_case(gap, strand)
    closed = close_seams(blocks, [], queries, targets)
    first = closed[0]
    assert (first.target_start, first.target_end) == (0, 20 + gap) and closed[1] == blocks[1]
    assert first.query_end - first.query_start == 20 + gap  # overlapping the second block on the contig
    contig, reference = queries["c"].codes, targets["ref"].codes
    piece = contig[first.query_start:first.query_end]
    oriented = piece if strand == "+" else reverse_complement_codes(piece)
    assert score_cigar(first.cigar, oriented, reference[first.target_start:first.target_end], SCHEME) == 2 * (20 + gap)


@pytest.mark.parametrize("strand", ["+", "-"])
def test_a_seam_extension_stops_at_a_differing_base_or_a_covered_reference_base(strand):
    from gpualign_plugin.compare.junctions import close_seams

    blocks, queries, targets = seam_case(4, strand, spoil=True)
    closed = close_seams(blocks, [], queries, targets)
    assert (closed[0].target_start, closed[0].target_end) == (0, 23) and closed[1] == blocks[1]
    blocks, queries, targets = seam_case(4, strand)
    covering = [replace(blocks[0], region="copy", target_start=22, target_end=24)]
    closed = close_seams(blocks, covering, queries, targets)
    assert (closed[0].target_start, closed[0].target_end) == (0, 22)


def test_a_seam_extension_needs_contig_bases_another_block_aligns():
    """Past the contig's blocks (an unaligned contig end) nothing is extended: the reference gap's
    bases equal the contig's there, but no other alignment holds those contig bases."""
    from gpualign_plugin.compare.junctions import close_seams

    blocks, queries, targets = seam_case(3, "+")
    assert close_seams(blocks[:1], [], queries, targets) == blocks[:1]
