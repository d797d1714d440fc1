"""Genome comparison: simulated strains, whole and cut into contigs of random orientation,
give back the planted events one for one, and the same differences either way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpualign_plugin.compare.api import anchored_syntenic, chain_anchors, compare_genomes, region_cells
from gpualign_plugin.compare.features import show_diff, side_totals
from gpualign_plugin.model import Cigar
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_text
from strains import LARGE, fragments, random_dna, simulated, to_strain

SCHEME = ScoringScheme.dna()
TOLERANCE = 12


def run(reference: str, contigs):
    queries = [SCHEME.encode(name, text) for name, text in contigs]
    return compare_genomes(queries, [SCHEME.encode("ref", reference)], SCHEME)


@pytest.fixture(scope="module", params=[3, 8])
def case(request):
    seed = request.param
    reference, strain, events = simulated(seed)
    whole = run(reference, [("s_ref", strain)])
    contigs, where = fragments(strain, events, seed)
    cut = run(reference, contigs)
    where["s_ref"] = (0, len(strain), False)
    texts = {"ref": reference, "s_ref": strain, **dict(contigs)}
    return SimpleNamespace(events=events, whole=whole, cut=cut, where=where, texts=texts)


def close(a: int, b: int) -> bool:
    return abs(a - b) <= TOLERANCE


def matches(difference, event, where) -> bool:
    query = to_strain(where, difference.query_id, difference.query_start, difference.query_end)
    kind = {"transposition": "relocation"}.get(event.event, event.event)
    return (difference.kind == kind and close(difference.target_start, event.ref_start)
            and close(difference.target_end, event.ref_end)
            and close(query[0], event.strain_start) and close(query[1], event.strain_end))


@pytest.mark.parametrize("which", ["whole", "cut"])
def test_every_planted_event_comes_back_once(case, which):
    events, where = case.events, case.where
    comparison = getattr(case, which)
    large = [e for e in events if e.event in LARGE]
    assert len(comparison.differences) == len(large), comparison.differences
    for event in large:
        found = [d for d in comparison.differences if matches(d, event, where)]
        assert len(found) == 1, (event, comparison.differences)
        if event.event == "transposition":
            assert close(found[0].inserted_at, int(event.detail.split("=")[1]))
        if event.event in ("inversion", "transposition"):
            # The moved or inverted bases are aligned in a region of their own.
            assert found[0].aligned_by and found[0].identity > 95.0
        assert found[0].orientation == ("-" if event.event == "inversion" else "+")


def test_a_contig_starting_just_before_a_moved_block_keeps_its_home(case):
    # The contig holds 300 bases before the moved block, the block, then the rest: its
    # home is the 300 bases and the rest (collinear), not the block and the rest (which
    # would imply a deletion of the reference between the block's origin and the rest).
    moved = next(e for e in case.events if e.event == "transposition")
    cut = max(moved.strain_start - 300, 50)
    contigs, where = fragments(case.texts["s_ref"], case.events, 1, cuts=[cut])
    comparison = run(case.texts["ref"], contigs)
    large = [e for e in case.events if e.event in LARGE]
    assert len(comparison.differences) == len(large), comparison.differences
    for event in large:
        assert sum(matches(d, event, where) for d in comparison.differences) == 1, event


def test_whole_and_cut_strain_give_the_same_differences(case):
    whole, cut, where = case.whole, case.cut, case.where

    def seen(comparison):
        return sorted((d.kind, d.target_start, d.target_end, d.orientation,
                       to_strain(where, d.query_id, d.query_start, d.query_end))
                      for d in comparison.differences)

    assert seen(whole) == seen(cut)
    assert side_totals(whole, "target").inversions == side_totals(cut, "target").inversions == 2


def planted_snps(events):
    """``{(reference position, ALT on the reference strand)}`` of the planted substitutions.

    Substitutions inside the inserted foreign block have no reference position; inside the
    inversion the truth table gives the strain's base, the complement of ALT on the reference.
    """
    inversion = next(e for e in events if e.event == "inversion")
    complement = str.maketrans("ACGT", "TGCA")
    snps = set()
    for e in events:
        if e.event == "substitution" and e.ref_start >= 0:
            alt = e.detail.split(">")[1]
            if inversion.strain_start <= e.strain_start < inversion.strain_end:
                alt = alt.translate(complement)
            snps.add((e.ref_start, alt))
    return snps


def test_snps_inside_inverted_and_moved_blocks_are_counted(case):
    events = case.events
    expected = planted_snps(events)
    moved = [e for e in events if e.event in ("inversion", "transposition")]
    inside = {(pos, alt) for pos, alt in expected
              if any(b.ref_start <= pos < b.ref_end for b in moved)}
    assert inside
    for comparison in (case.whole, case.cut):
        snps = {(v.target_pos, v.alt) for v in comparison.variants if v.kind == "snp"}
        assert len(snps) == sum(v.kind == "snp" for v in comparison.variants)
        # Every planted substitution is found, inverted and moved blocks included; a few
        # next to an indel or a block edge may be aligned differently.
        assert len(inside - snps) <= 1
        assert len(expected - snps) <= 3
        assert len(snps - expected) <= 3
    assert sorted((v.target_pos, v.ref, v.alt) for v in case.whole.variants if v.kind == "snp") == \
        sorted((v.target_pos, v.ref, v.alt) for v in case.cut.variants if v.kind == "snp")


def test_every_region_alignment_scores_as_reported(case):
    texts = case.texts
    for comparison in (case.whole, case.cut):
        for region in comparison.regions:
            piece = texts[region.query_id][region.query_start:region.query_end]
            if region.strand == "-":
                piece = reverse_complement_text(piece)
            window = texts[region.target_id][region.target_start:region.target_end]
            assert region.alignment.recompute_score(
                SCHEME.alphabet.encode(piece), SCHEME.alphabet.encode(window), SCHEME) == \
                region.alignment.score
        for block in comparison.blocks:
            assert block.cigar.query_length() == block.query_end - block.query_start
            assert block.cigar.target_length() == block.target_end - block.target_start


def _block(query, target, strand, qs, qe, ts, te):
    from gpualign_plugin.compare.api import AlignedBlock

    return AlignedBlock("R1", query, target, strand, qs, qe, ts, te,
                        Cigar.from_runs([(te - ts, "=")]))


def test_show_diff_rules_on_a_transposition_and_an_inversion():
    # Reference A B C D E; query A C B D' E (B and C swapped, D inverted), as nucmer would align.
    blocks = [_block("q", "r", "+", 0, 100, 0, 100),
              _block("q", "r", "+", 100, 200, 200, 300),
              _block("q", "r", "+", 200, 300, 100, 200),
              _block("q", "r", "-", 300, 400, 300, 400),
              _block("q", "r", "+", 400, 500, 400, 500)]
    kinds = [f.kind for f in show_diff(blocks, {"r": 500}, "target")]
    # Along r: A->B jumps back in q, B->C jumps, C->D changes strand, D->E changes back.
    assert kinds == ["JMP", "JMP", "INV", "INV"]
    assert [f.kind for f in show_diff(blocks, {"q": 500}, "query")] == ["JMP", "JMP", "INV", "INV"]
    # A gap on the reference between consistent neighbours is a GAP with both lengths.
    gapped = [_block("q", "r", "+", 0, 100, 0, 100), _block("q", "r", "+", 100, 200, 150, 250)]
    assert show_diff(gapped, {"r": 300}, "target")[0].kind == "GAP"
    assert (show_diff(gapped, {"r": 300}, "target")[0].gap,
            show_diff(gapped, {"r": 300}, "target")[0].other_gap) == (50, 0)
    assert show_diff(gapped, {"r": 300}, "target")[-1].kind == "BRK"
    # Neighbours from different contigs: SEQ (a translocation in dnadiff's report).
    two = [_block("a", "r", "+", 0, 100, 0, 100), _block("b", "r", "+", 0, 100, 100, 200)]
    assert [f.kind for f in show_diff(two, {"r": 200}, "target")] == ["SEQ"]


def test_show_diff_skips_alignments_contained_in_another_as_show_diff_does():
    # A contig longer than the reference (a circular genome with overlapping ends, or a
    # redundant contig) covers the whole reference; shorter alignments lie inside it.
    # show-diff walks only the covering alignments (its RLIS): no gap of the reference is
    # unaligned, and a piece contained on the other side is a DUP (dnadiff: rdiff empty,
    # qdiff DUPs; AlignedBases [REF] 100%, no relocation or translocation).
    blocks = [_block("long", "r", "+", 300, 1300, 0, 1000),
              _block("long", "r", "+", 0, 300, 700, 1000),
              _block("long", "r", "+", 1300, 1400, 0, 100),
              _block("short", "r", "+", 0, 200, 400, 600)]
    assert show_diff(blocks, {"r": 1000}, "target") == []
    query = show_diff(blocks, {"long": 1400, "short": 200}, "query")
    assert [f.kind for f in query] == ["DUP", "DUP", "DUP"]
    lengths = SimpleNamespace(blocks=blocks, copies=[], target_lengths={"r": 1000},
                              query_lengths={"long": 1400, "short": 200})
    ref, qry = side_totals(lengths, "target"), side_totals(lengths, "query")
    assert ref.aligned_bases == 1000 and qry.aligned_bases == 1600
    assert (ref.relocations, ref.translocations, qry.relocations, qry.translocations) == (0, 0, 0, 0)


def test_anchored_chunks_give_the_same_alignment_and_comparison(case):
    home = next(r for r in case.whole.regions if r.role == "home")
    chain = [p for p in case.whole.placements if p.target_id == home.target_id
             and p.strand == home.strand and p.query_start >= home.query_start
             and p.query_end <= home.query_end]
    anchors = chain_anchors(chain, home.query_start, home.query_end, home.target_start, 1000)
    assert len(anchors) >= 5
    piece = SCHEME.alphabet.encode(case.texts["s_ref"][home.query_start:home.query_end])
    window = SCHEME.alphabet.encode(case.texts["ref"][home.target_start:home.target_end])
    whole = anchored_syntenic(piece, window, SCHEME, home.alignment.block_penalty)
    chunked = anchored_syntenic(piece, window, SCHEME, home.alignment.block_penalty, anchors)
    assert chunked == whole == home.alignment
    assert chunked.recompute_score(piece, window, SCHEME) == chunked.score
    # The whole comparison with 1000-base chunks: the same differences and variants.
    queries = [SCHEME.encode(name, case.texts[name]) for name in case.cut.query_lengths]
    again = compare_genomes(queries, [SCHEME.encode("ref", case.texts["ref"])], SCHEME,
                            chunk_length=1000)
    assert again.differences == case.cut.differences
    assert again.variants == case.cut.variants


def test_stages_after_placement_are_announced_with_their_cells():
    """on_stage: regions, then repeat copies (chrB outside its piece, 5,000 bases, is
    uncovered: both strands against the contig), each with its estimate, the cells of each
    stage counted after it; the comparison is the same."""
    chr_a, chr_b = random_dna(6000, 91), random_dna(6000, 92)
    contig = SCHEME.encode("contig", chr_a[:3000] + chr_b[1000:2000] + chr_a[3000:])
    targets = [SCHEME.encode("chrA", chr_a), SCHEME.encode("chrB", chr_b)]
    events = []
    comparison = compare_genomes([contig], targets, SCHEME, on_progress=lambda c: events.append(c),
                                 on_stage=lambda name, cells: events.append((name, cells)))
    stages = [k for k, e in enumerate(events) if isinstance(e, tuple)]
    assert [events[k] for k in stages] == [
        ("aligning regions", region_cells([contig], targets)),
        ("repeat copies", 2 * (len(chr_b) - 1000) * len(contig))]
    assert stages[0] > 0 and stages[1] > stages[0] + 1 and stages[1] < len(events) - 1
    assert comparison == compare_genomes([contig], targets, SCHEME)


@pytest.mark.parametrize("orientation, seed", [("+", 71), ("-", 81)])
def test_a_piece_from_another_record_is_one_translocation(orientation, seed):
    chr_a, chr_b = random_dna(6000, seed), random_dna(6000, seed + 1)
    piece = chr_b[1000:2000] if orientation == "+" else reverse_complement_text(chr_b[1000:2000])
    contig = chr_a[:3000] + piece + chr_a[3000:]
    comparison = compare_genomes([SCHEME.encode("contig", contig)],
                                 [SCHEME.encode("chrA", chr_a), SCHEME.encode("chrB", chr_b)],
                                 SCHEME)
    (event,) = comparison.differences
    assert (event.kind, event.target_id, event.orientation) == ("translocation", "chrB", orientation)
    # Junction bases may match either side by chance.
    assert close(event.query_start, 3000) and close(event.query_end, 4000)
    assert close(event.target_start, 1000) and close(event.target_end, 2000)
    # dnadiff's rows: along the contig, chrA -> chrB -> chrA are two SEQ features; along
    # chrA the two pieces are consistent neighbours (a GAP), chrB has one alignment.
    assert side_totals(comparison, "query").translocations == 2
    assert side_totals(comparison, "target").translocations == 0
    assert {b.target_id for b in comparison.blocks} == {"chrA", "chrB"}
    assert not comparison.variants


@pytest.mark.parametrize("orientation, seed", [("+", 91), ("-", 92)])
def test_a_copied_block_whose_original_stays_is_a_duplication_not_a_move(orientation, seed):
    # A segmental duplication: reference bases 3000-5000 stay in place and a copy of them
    # (reversed for '-') sits at 12000. Nothing moved: the reference interval is aligned at
    # its own place too, so a relocation (or inversion) "from 3000-5000" would be wrong.
    reference = random_dna(16000, seed)
    copy = reference[3000:5000] if orientation == "+" else reverse_complement_text(reference[3000:5000])
    comparison = run(reference, [("contig", reference[:12000] + copy + reference[12000:])])
    (event,) = comparison.differences
    assert (event.kind, event.orientation) == ("duplication", orientation)
    assert close(event.query_start, 12000) and close(event.query_end, 14000)
    assert close(event.target_start, 3000) and close(event.target_end, 5000)
    assert close(event.inserted_at, 12000)
    assert comparison.count("duplication") == (1, event.query_span, event.target_span)


def test_a_tandem_expansion_is_no_move_of_the_contig_around_it():
    # Three extra copies of a 100 bp unit: the placement's pieces on both sides overlap by
    # more than a unit on the reference (a tandem duplication: the contig reads those bases
    # again). They are one collinear chain; the events are the extra copies, not the 10 kbp
    # after them moved (a relocation of [10200, 20300) was reported before).
    reference = random_dna(20000, 92)
    unit = reference[10000:10100]
    comparison = run(reference, [("contig", reference[:10100] + 3 * unit + reference[10100:])])
    assert comparison.differences
    assert all(d.kind in ("insertion", "duplication", "small") for d in comparison.differences)
    assert all(10000 - TOLERANCE <= d.query_start and d.query_end <= 10400 + TOLERANCE
               for d in comparison.differences)
    assert sum(d.query_span for d in comparison.differences) <= 300 + TOLERANCE


def _copies_by_definition(work, blocks, evalue):
    """The repeat copies as defined (compare.api._repeat_copies): each uncovered reference stretch
    (``uncovered_stretches``) aligned (exact local) with every contig on both strands one pair at a time, the best kept
    (ties: contig order, then '+') if its E-value and identity pass; as (contig, strand, contig
    interval, reference interval, CIGAR of the reference stretch against the contig)."""
    from gpualign_plugin.compare.api import uncovered_stretches
    from gpualign_plugin.pairwise.api import align_sequences
    from gpualign_plugin.scoring import Sequence
    from gpualign_plugin.statistics import parameters_for

    parameters = parameters_for(work.scheme)
    contigs = list(work.queries.values())
    residues = sum(len(c) for c in contigs)
    found = []
    for target, start, end in uncovered_stretches(work, blocks):
        piece = Sequence(target.id, "", target.codes[start:end])
        best = None
        for contig in contigs:
            for strand in ("+", "-"):
                hit = align_sequences(piece, contig, work.scheme, "local", strand=strand)
                if hit is not None and (best is None or hit.score > best.score):
                    best = hit
        if (best is not None and best.identity >= work.min_identity
                and parameters.evalue(best.score, len(piece), residues, len(contigs)) <= evalue):
            found.append((best.target_id, best.strand, best.target_start, best.target_end,
                          start + best.query_start, start + best.query_end, best.cigar.runs))
    return found


@pytest.mark.parametrize("seed", range(4))
def test_repeat_copies_are_the_best_alignment_of_each_uncovered_stretch(seed, monkeypatch):
    """Reference stretches that no region covers (deleted in the strain, or a collapsed repeat)
    are found in the assembly through one local placement of all stretches on the contigs; the
    copies equal the definition computed pair by pair."""
    import random

    from gpualign_plugin.compare import api

    rng = random.Random(seed)
    base, repeat = random_dna(3000, seed), random_dna(400, 100 + seed)
    reference = base[:700] + repeat + base[700:1800] + repeat + base[1800:]
    # The strain keeps the first copy of the repeat only (collapsed) and loses a stretch of base.
    second = 700 + 400 + 1100
    cut = rng.randrange(2700, 3000)
    strain = "".join(c if rng.random() > 0.02 else rng.choice("ACGT")
                     for c in reference[:second] + reference[second + 400:cut] + reference[cut + 300:])
    contigs = [(f"c{k}", strain[k:k + 900]) for k in range(0, len(strain), 900)]
    contigs[1] = (contigs[1][0], reverse_complement_text(contigs[1][1]))
    contigs.append(("noise", random_dna(500, 200 + seed)))
    captured = {}
    found = api._repeat_copies

    def keep(work, blocks, evalue, threads=None, on_stage=None):
        captured.update(work=work, blocks=blocks, evalue=evalue)
        return found(work, blocks, evalue, threads, on_stage)

    monkeypatch.setattr(api, "_repeat_copies", keep)
    comparison = run(reference, contigs)
    expected = _copies_by_definition(captured["work"], captured["blocks"], captured["evalue"])
    swap = {"I": "D", "D": "I"}
    got = [(c.query_id, c.strand, c.query_start, c.query_end, c.target_start, c.target_end,
            tuple((n, swap.get(op, op)) for n, op in (c.cigar.runs if c.strand == "+" else c.cigar.runs[::-1])))
           for c in comparison.copies]
    assert got == [(*e[:6], tuple(e[6])) for e in expected]
    assert any(c[4] < second + 400 and c[5] > second for c in got)  # the collapsed copy


@pytest.mark.parametrize("grown", [(False, True), (True, False), (True, True)])
def test_grown_ends_are_cut_where_their_score_peaks(grown):
    """A matching region starting with three mismatches and ending with four loses them, at a
    grown end, to a terminal difference block; the result still tiles both sequences and
    scores as reported."""
    from gpualign_plugin.compare.api import trim_grown_ends
    from gpualign_plugin.model import SyntenicAlignment, SyntenicBlock, score_cigar

    piece = SCHEME.alphabet.encode("TTTACGTACGTAAAAACCCC")
    window = SCHEME.alphabet.encode("GGGACGTACGTAAAAAGGGG")
    cigar = Cigar.from_runs([(3, "X"), (13, "="), (4, "X")])
    block = SyntenicBlock("match", 0, 20, 0, 20, score_cigar(cigar, piece, window, SCHEME), cigar)
    trimmed = trim_grown_ends(SyntenicAlignment("q", "t", 20, 20, block.score, 50, (block,)), piece, window,
                              SCHEME, grown)
    expected = ([("difference", 0, 3)] if grown[0] else []) + \
        [("match", 3 if grown[0] else 0, 16 if grown[1] else 20)] + ([("difference", 16, 20)] if grown[1] else [])
    assert [(b.kind, b.query_start, b.query_end) for b in trimmed.blocks] == expected
    assert trimmed.recompute_score(piece, window, SCHEME) == trimmed.score


def test_a_grown_end_of_mismatches_only_joins_the_unaligned_block_before_it():
    from gpualign_plugin.compare.api import trim_grown_ends
    from gpualign_plugin.model import SyntenicAlignment, SyntenicBlock

    piece = SCHEME.alphabet.encode("ACGTACGTACGTAAAAACCC")
    window = SCHEME.alphabet.encode("ACGTACGTACGTAGGGGGGG")
    kept = SyntenicBlock("match", 0, 13, 0, 13, 26, Cigar.from_runs([(13, "=")]))
    unaligned = SyntenicBlock("difference", 13, 16, 13, 16, -50)
    mismatches = SyntenicBlock("match", 16, 20, 16, 20, -12, Cigar.from_runs([(4, "X")]))
    alignment = SyntenicAlignment("q", "t", 20, 20, 26 - 50 - 12, 50, (kept, unaligned, mismatches))
    assert alignment.recompute_score(piece, window, SCHEME) == alignment.score
    trimmed = trim_grown_ends(alignment, piece, window, SCHEME, (False, True))
    assert [(b.kind, b.query_start, b.query_end, b.target_end) for b in trimmed.blocks] == \
        [("match", 0, 13, 13), ("difference", 13, 20, 20)]
    assert trimmed.recompute_score(piece, window, SCHEME) == trimmed.score == 26 - 50


@pytest.mark.parametrize("query_side, target_side, joined", [
    ("", "GATTACAGATTACAGATTACAGATTACAGA", True),      # a 30-base deletion
    ("CCGGTTAACCGGTTAACCGGTTAAC", "", True),            # a 25-base insertion
    ("CCGGTTAACC", "GATTACAGATTACAGATTACAGATTACAGATTACA", True),  # both sides, the shorter under 50
    ("", "G" * 50, False),                              # a deletion of min_event bases: an event
    ("C" * 10, "G" * 85, False),                        # a side of min_event bases or more: an event
    ("C" * 50, "G" * 60, False),                        # both sides: a replacement
])
def test_a_small_interior_difference_block_is_aligned_through(query_side, target_side, joined):
    """[match, difference, match] becomes one matching region when the difference is small:
    the flanks' columns unchanged, the middle an optimal global alignment (Biopython's score),
    the whole rescored; a block with a side of ``min_event`` (50) bases or more stays."""
    from gpualign_plugin.compare.api import join_small_differences
    from gpualign_plugin.model import SyntenicAlignment, SyntenicBlock, score_cigar
    from oracles import biopython_aligner

    left, right = "ACGTTGCAAGTCCGATAGCT", "TTGACCAGTAGGCATCGATC"
    piece = SCHEME.alphabet.encode(left + query_side + right)
    window = SCHEME.alphabet.encode(left + target_side + right)
    flank = Cigar.from_runs([(20, "=")])
    q, t = len(query_side), len(target_side)
    blocks = (SyntenicBlock("match", 0, 20, 0, 20, 40, flank),
              SyntenicBlock("difference", 20, 20 + q, 20, 20 + t, -50),
              SyntenicBlock("match", 20 + q, 40 + q, 20 + t, 40 + t, 40, flank))
    result = join_small_differences(SyntenicAlignment("q", "t", 40 + q, 40 + t, 30, 50, blocks), piece, window,
                                    SCHEME, 50)
    if not joined:
        assert result.blocks == blocks
        return
    (block,) = result.blocks
    assert (block.kind, block.query_end, block.target_end) == ("match", 40 + q, 40 + t)
    assert block.cigar.runs[0][1] == block.cigar.runs[-1][1] == "="
    assert result.score == block.score == score_cigar(block.cigar, piece, window, SCHEME)
    middle = score_cigar(block.cigar, piece, window, SCHEME) - 80
    if q and t:
        assert middle == biopython_aligner(SCHEME, "global").score(target_side, query_side)
    else:
        assert middle == -(SCHEME.gap_open + SCHEME.gap_extend * (q + t))


def test_a_gap_run_continued_across_a_join_opens_once():
    """A matching region ending in a deletion, joined with a small deletion block after it: one
    run of 32 D, and the joined score is that of the whole CIGAR (one gap open, not two)."""
    from gpualign_plugin.compare.api import join_small_differences
    from gpualign_plugin.model import SyntenicAlignment, SyntenicBlock, score_cigar

    left, right, deleted = "ACGTTGCAAGTCCGATAGCT", "TTGACCAGTAGGCATCGATC", "GG" + "GATTACA" * 4 + "GA"
    piece = SCHEME.alphabet.encode(left + right)
    window = SCHEME.alphabet.encode(left + deleted + right)
    first_cigar = Cigar.from_runs([(20, "="), (2, "D")])
    first = SyntenicBlock("match", 0, 20, 0, 22, score_cigar(first_cigar, piece[:20], window[:22], SCHEME), first_cigar)
    gap = SyntenicBlock("difference", 20, 20, 22, 52, -50)
    last = SyntenicBlock("match", 20, 40, 52, 72, 40, Cigar.from_runs([(20, "=")]))
    result = join_small_differences(SyntenicAlignment("q", "t", 40, 72, first.score - 50 + 40, 50,
                                                      (first, gap, last)), piece, window, SCHEME, 50)
    (block,) = result.blocks
    assert str(block.cigar) == "20=32D20="
    assert block.score == result.score == score_cigar(block.cigar, piece, window, SCHEME) == \
        80 - SCHEME.gap_open - 32 * SCHEME.gap_extend


def test_joined_blocks_score_as_their_joined_cigar_and_differences_cost_one_penalty():
    """Neighbouring blocks of one kind become one: matching regions score what their joined
    CIGAR rescores to (a deletion run continued across the seam opens once), a run of
    difference blocks costs one block penalty; blocks of the other kind stay apart."""
    from gpualign_plugin.compare.api import joined_blocks
    from gpualign_plugin.model import SyntenicBlock, score_cigar

    q, t = SCHEME.alphabet.encode("ACGTACGTTTGCA"), SCHEME.alphabet.encode("ACGTAGGACGTTTGCA")
    left, right = Cigar.from_runs([(5, "="), (2, "D")]), Cigar.from_runs([(1, "D"), (8, "=")])
    parts = [SyntenicBlock("difference", 0, 0, 0, 0, -50), SyntenicBlock("difference", 0, 0, 0, 0, -50),
             SyntenicBlock("match", 0, 5, 0, 7, score_cigar(left, q[:5], t[:7], SCHEME), left),
             SyntenicBlock("match", 5, 13, 7, 16, score_cigar(right, q[5:], t[7:], SCHEME), right),
             SyntenicBlock("difference", 13, 13, 16, 16, -50)]
    joined = joined_blocks(parts, SCHEME, 50)
    assert [b.kind for b in joined] == ["difference", "match", "difference"]
    assert joined[0].score == joined[2].score == -50
    match = joined[1]
    assert str(match.cigar) == "5=3D8=" and (match.query_start, match.query_end, match.target_end) == (0, 13, 16)
    assert match.score == score_cigar(match.cigar, q, t, SCHEME) == parts[2].score + parts[3].score + SCHEME.gap_open
