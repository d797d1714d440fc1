"""Genome comparison in the spirit of MUMmer's dnadiff: placements, syntenic alignments, differences.

An assembly (the *query*, any number of contigs in any orientation) is compared with a
reference (the *target*) in three steps:

1. **Placement.** Every significant local alignment of each contig, both strands,
   non-overlapping on the contig (``gpualign_plugin.pairwise.api.place_local``), the junction
   of each two that meet on it moved to where their scores sum highest
   (:func:`~gpualign_plugin.compare.junctions.settle_junctions`).
2. **Regions.** The placements of a contig are chained: the heaviest chain of placements
   on one target record and one strand that are collinear (in the same order on the
   contig and the reference) is the contig's *home*; the other placements form further
   chains. Each chain is a *region*: the contig piece it spans, on its strand, against the
   reference window it spans. Where a chain ends within ``END_EXTENSION`` bases of the
   contig's end and the reference goes on, the region is extended to the contig's end
   (the syntenic alignment then aligns the end as far as its score rises, and leaves the rest
   as a terminal block, which is not a difference: :func:`trim_grown_ends`). Each region gets
   the exact syntenic alignment
   (:func:`gpualign_plugin.syntenic.api.syntenic_align`, CPU or GPU, identical); a region
   longer than twice ``chunk_length`` is aligned in chunks between anchors taken from long
   identical runs of its placements (:func:`anchored_syntenic`), so a long contig costs
   about its length times ``chunk_length`` cells instead of its length squared.
3. **Differences.** Chains other than the home are events of their own: ``inversion``
   (same target, other strand), ``relocation`` (same target and strand, out of order),
   ``duplication`` (either of those two where the home region's matching regions align the
   chain's reference bases too: a copy, the original still in place) or ``translocation``
   (another target record). Inside a region, each difference block of
   the syntenic alignment loses the parts other regions align (a block the inverted
   supplementary placement covers is that inversion, not a replacement); what is left is
   classified:

   ``inversion``
       Both sides present and the query side aligns to the reverse complement of the
       reference side.
   ``insertion`` / ``deletion``
       Query bases only / reference bases only.
   ``relocation``
       An insertion and a deletion (anywhere in the comparison; lengths within a factor of
       2) whose sequences align to each other: a moved block. One event, with the moved
       block's contig interval and its origin on the reference.
   ``replacement``
       Both sides present, no inversion.
   ``small``
       Both sides shorter than ``min_event`` bases (a cluster of point differences) at a
       region's end; inside a region such a block is aligned through
       (:func:`join_small_differences`), as nucmer aligns through it.

   Inverted and relocated blocks get a syntenic alignment of their own (a nested region)
   so that their SNPs and indels are counted and written like any other.

Conventions
-----------
* Coordinates are 0-based, half-open, on the forward strand of each sequence.
* "Aligns" (inversion and relocation tests) means that the optimal local alignment
  (exact pairwise engine) covers at least ``min_coverage`` of the shorter sequence with at
  least ``min_identity`` identical columns, contig bases of low-complexity stretches (DUST,
  :func:`gpualign_plugin.pairwise.api.low_complexity_mask`) not counted as covered: an (AT)n stretch
  inserted in one place and another deleted elsewhere align to each other, and an (AT)n
  stretch to its own reverse complement, without being a moved or inverted block.
* SNPs are ``X`` columns of matching regions; indels are runs of ``I`` or ``D`` in them.
  The variants of a minus-strand region are given on the reference's forward strand (the
  CIGAR reads the reverse-complemented query), as a VCF needs.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Callable

import numpy as np

from gpualign_plugin.model import (Alignment, Cigar, SyntenicAlignment, SyntenicBlock, cigar_columns,
                                   column_ops, column_scores, score_cigar)
from gpualign_plugin.compare.junctions import close_seams, grown_block, settle_junctions
from gpualign_plugin.pairwise.api import align_sequences, place_local
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_codes
from gpualign_plugin.syntenic.api import default_block_penalty, syntenic_align

END_EXTENSION = 200
"""A chain ending this close (bases) to its contig's end is extended to that end."""

CHAIN_OVERLAP = 100
"""Consecutive placements of a chain may overlap this many contig bases (shared flanks), and as
many reference bases (more is a tandem duplication: :func:`chain_placements`)."""

CHUNK_LENGTH = 20000
"""A region's syntenic alignment is cut at placement anchors about this many contig bases apart."""

CONCURRENT_CHUNKS = 8
"""Most chunks of a region aligned at once on the CPU: each holds up to the syntenic engine's
256 MiB of direction bytes (:data:`gpualign_plugin.syntenic.api.DEFAULT_MEMORY_BUDGET`), so eight
stay near 2.5 GiB."""

EDGE_REACH = 64
"""Columns of a matching region next to an inverted block that :func:`widen_inverted_blocks` may
give to it (and bases of each inverted seam it looks at)."""

ANCHOR_RUN = 20
"""An anchor is the middle of a run of at least this many identical columns of a placement."""

EVENT_KINDS = ("insertion", "deletion", "inversion", "relocation", "duplication",
               "translocation", "replacement", "small")
"""Kinds of differences, in report order."""


@dataclass(frozen=True)
class Region:
    """A contig piece, on one strand, aligned to a reference window (one syntenic alignment).

    Attributes
    ----------
    id : str
        ``R1``, ``R2``, ... in the order the regions were made.
    query_id, target_id : str
        Contig and reference record.
    strand : str
        ``'+'``, or ``'-'``: the reverse complement of the contig piece is aligned.
    query_start, query_end, target_start, target_end : int
        The piece and the window, forward strand.
    alignment : SyntenicAlignment
        The oriented piece (rows) against the window (columns), coordinates relative to both.
    role : str
        ``'home'`` (a contig's heaviest collinear chain), ``'inversion'``, ``'relocation'``,
        ``'translocation'`` (another chain of placements), or for a nested region the kind of
        the difference block it aligns (``'inversion'``, ``'relocation'``).
    parent : str
        For a nested region, the region whose difference block it aligns; else ``''``.
    """

    id: str
    query_id: str
    target_id: str
    strand: str
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    alignment: SyntenicAlignment
    role: str
    parent: str = ""

    def query_interval(self, start: int, end: int) -> tuple[int, int]:
        """Forward-strand contig interval of the oriented piece's ``[start, end)``."""
        if self.strand == "+":
            return self.query_start + start, self.query_start + end
        return self.query_end - end, self.query_end - start

    def query_position(self, offset: int) -> int:
        """Forward-strand contig position of the oriented piece's base ``offset``."""
        if self.strand == "+":
            return self.query_start + offset
        return self.query_end - 1 - offset


@dataclass(frozen=True)
class AlignedBlock:
    """One matching region of a region, in record coordinates (what dnadiff calls an alignment).

    Attributes
    ----------
    region : str
        Id of the region it belongs to.
    query_id, target_id, strand : str
        As in :class:`Region`.
    query_start, query_end, target_start, target_end : int
        Forward strand.
    cigar : Cigar
        Along the reference; on ``'-'`` it reads the reverse-complemented contig.
    """

    region: str
    query_id: str
    target_id: str
    strand: str
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    cigar: Cigar

    @property
    def matches(self) -> int:
        """Identical columns."""
        return self.cigar.op_lengths["="]

    @property
    def columns(self) -> int:
        """Alignment columns."""
        return self.cigar.columns()

    @property
    def identity(self) -> float:
        """Identical columns / columns, in percent."""
        return 100.0 * self.matches / self.columns if self.columns else 0.0


@dataclass(frozen=True)
class Difference:
    """One structural difference (an event).

    Attributes
    ----------
    id : str
        ``E1``, ``E2``, ... in report order (sorted by reference record and position).
    kind : str
        One of :data:`EVENT_KINDS`.
    query_id : str
        Contig.
    query_start, query_end : int
        The event's bases in the contig (equal for a deletion: the junction).
    target_id : str
        Reference record.
    target_start, target_end : int
        The event's bases in the reference (equal for an insertion: the junction). For a
        relocation or translocation: where the block comes from; for a duplication: the
        reference bases it copies (which the contig also holds at their own place).
    orientation : str
        ``'-'`` when the event's contig bases read the reverse complement of its reference
        bases relative to their surroundings (an inversion), else ``'+'``.
    region : str
        The region in which it was seen.
    aligned_by : str
        The region aligning the event's bases (inversions, relocations, duplications,
        translocations), else ``''``.
    identity : float
        Identity (percent) of that region's matching regions; 0 when none.
    inserted_at : int
        For a relocation or a duplication: the reference position of the insertion (where
        the block went, or its copy), when found; else -1.
    """

    id: str
    kind: str
    query_id: str
    query_start: int
    query_end: int
    target_id: str
    target_start: int
    target_end: int
    orientation: str
    region: str
    aligned_by: str = ""
    identity: float = 0.0
    inserted_at: int = -1

    @property
    def query_span(self) -> int:
        """Contig bases of the event."""
        return self.query_end - self.query_start

    @property
    def target_span(self) -> int:
        """Reference bases of the event."""
        return self.target_end - self.target_start


@dataclass(frozen=True)
class Variant:
    """A SNP or a small indel inside a matching region, on the reference's forward strand.

    Attributes
    ----------
    target_id : str
        Reference record.
    target_pos : int
        0-based reference position of the first reference base of ``ref`` (a SNP or
        deletion), or of the base after which the insertion lies plus one (an insertion
        lies before ``target_pos``).
    ref, alt : str
        Reference and contig bases (``''`` for the missing side of an indel); the contig
        bases are read on the reference's strand.
    query_id : str
        Contig.
    query_pos : int
        0-based forward-strand contig position of the first contig base (SNP, insertion), or
        of the contig base next to a deletion.
    strand : str
        Strand of the region (``'-'``: the contig is reverse complemented there).
    region : str
        Region id.
    buffer : int
        show-snps' ``[BUFF]`` (as dnadiff runs it, by reference position): the distance to the
        nearest other SNP or indel base of its matching region, or one plus the distance to
        the region's nearer end; for an indel the least over its bases. dnadiff's "good"
        SNPs and indels have ``buffer >= 20``.
    """

    target_id: str
    target_pos: int
    ref: str
    alt: str
    query_id: str
    query_pos: int
    strand: str
    region: str
    buffer: int

    @property
    def kind(self) -> str:
        """``'snp'``, ``'insertion'`` or ``'deletion'``."""
        if self.ref and self.alt:
            return "snp"
        return "insertion" if self.alt else "deletion"


@dataclass
class GenomeComparison:
    """Everything a comparison found.

    Attributes
    ----------
    query_lengths, target_lengths : dict of str to int
        Every record of each genome, in file order.
    placements : list of Alignment
        The local placements the regions were built from.
    regions : list of Region
    blocks : list of AlignedBlock
        Matching regions of every region (nested ones included; two that abut on both
        sequences joined, :func:`_join_abutting`), sorted by reference record order and
        position.
    differences : list of Difference
    variants : list of Variant
        SNPs and indels, sorted by reference record order and position.
    copies : list of AlignedBlock
        Repeat copies (region ``'copy'``): for each stretch of a reference record that no
        block covers (at least ``min_event`` bases), the best significant local alignment
        of it to the assembly, if any: a reference copy of a repeat the assembly holds
        once. dnadiff's many-to-many alignments include such copies; they count in the
        report's ``M-to-M`` rows and the reference's ``AlignedBases``, nowhere else.
    """

    query_lengths: dict
    target_lengths: dict
    placements: list = field(default_factory=list)
    regions: list = field(default_factory=list)
    blocks: list = field(default_factory=list)
    differences: list = field(default_factory=list)
    variants: list = field(default_factory=list)
    copies: list = field(default_factory=list)

    def count(self, kind: str) -> tuple[int, int, int]:
        """``(events, contig bases, reference bases)`` of the differences of ``kind``."""
        events = [d for d in self.differences if d.kind == kind]
        return len(events), sum(d.query_span for d in events), sum(d.target_span for d in events)


def place_contigs(queries: list[Sequence], targets: list[Sequence], scheme: ScoringScheme, *,
                  backend: str = "cpu", evalue: float = 1e-5, threads: int | None = None,
                  device: int = 0, on_progress: Callable[[int], None] | None = None) -> list[Alignment]:
    """Local placement of every contig: the pieces the regions are built from.

    Every significant local alignment of each contig on any reference record and strand,
    non-overlapping on the contig (:func:`gpualign_plugin.pairwise.api.place_local`, E-value
    cutoff ``evalue``): the primary and supplementary records. Close secondary placements
    (another copy of the same piece) are left out: a region per piece of contig.
    ``on_progress`` gets DP cells as they are computed.
    """
    placed = place_local(queries, targets, scheme, backend=backend, evalue=evalue,
                         strands="both", threads=threads, device=device, on_progress=on_progress)
    return [a for a in placed if a.is_primary or a.is_supplementary]


def region_cells(queries: list[Sequence], targets: list[Sequence], chunk_length: int = CHUNK_LENGTH) -> int:
    """DP cells the regions' syntenic alignments are expected to compute (an estimate for a
    progress bar): each contig base against about ``2 * chunk_length`` reference bases (the
    anchors cut a region into chunks of about ``chunk_length`` contig bases), or the whole
    reference when it is shorter."""
    reference_bases = sum(len(t) for t in targets)
    return sum(len(q) for q in queries) * min(reference_bases, 2 * chunk_length)


def compare_genomes(queries: list[Sequence], targets: list[Sequence], scheme: ScoringScheme, *,
                    placements: list[Alignment] | None = None, block_penalty: int | None = None,
                    min_event: int = 50, min_identity: float = 0.8, min_coverage: float = 0.5,
                    backend: str = "cpu", device: int = 0, evalue: float = 1e-5,
                    threads: int | None = None, chunk_length: int = CHUNK_LENGTH,
                    on_progress: Callable[[int], None] | None = None,
                    on_stage: Callable[[str, int], None] | None = None) -> GenomeComparison:
    """Compare an assembly with a reference (see the module notes).

    Parameters
    ----------
    queries, targets : list of Sequence
        Contigs of the assembly and records of the reference (DNA scheme).
    scheme : ScoringScheme
        DNA scoring of placements, syntenic alignments and event tests.
    placements : list of Alignment, optional
        Local placements of the contigs; computed with :func:`place_contigs` when omitted.
        Their junctions are settled (:func:`settle_junctions`) either way, and the
        comparison's ``placements`` are the settled ones.
    block_penalty : int, optional
        Syntenic block penalty; default :func:`default_block_penalty`.
    min_event : int
        A side of a difference block shorter than this (bases) counts as empty.
    min_identity, min_coverage : float
        What an inversion or relocation test must reach (fractions).
    backend, device
        ``'cpu'`` or ``'gpu'`` (resolved) for placement and syntenic alignment; both give
        the same comparison.
    evalue, threads
        Placement's cutoff, and the CPU threads of placement and of a region's syntenic
        alignment (its chunks at once; ``None``: every core).
    chunk_length : int
        Spacing of the anchors that cut a placed region's syntenic alignment into chunks
        (:func:`chain_anchors`); a region shorter than twice this is aligned in one piece.
    on_progress : callable, optional
        Called with DP cells as placement, syntenic alignment and the search for repeat copies
        compute them (placement's, then :func:`region_cells`, then the repeat copies').
    on_stage : callable, optional
        Called with ``(name, cells)`` as each stage after placement starts, so that a progress
        bar can give each its own rate (a syntenic cell costs about 50 times a score pass's on
        the CPU): ``'aligning regions'`` with :func:`region_cells` of the placed contigs, then
        ``'repeat copies'`` with the cells of its score passes (both strands of every
        uncovered reference stretch against every contig; not called when there is none).

    Returns
    -------
    GenomeComparison
    """
    if placements is None:
        placements = place_contigs(queries, targets, scheme, backend=backend, evalue=evalue,
                                   threads=threads, device=device, on_progress=on_progress)
    placements = settle_junctions(placements, queries, targets, scheme)
    penalty = default_block_penalty(scheme) if block_penalty is None else block_penalty
    work = _Work(queries, targets, scheme, penalty, min_event, min_identity, min_coverage,
                 backend, device, chunk_length, on_progress, threads or os.cpu_count() or 1)
    mapped = [p for p in placements if p.target_id in work.targets and p.query_end > p.query_start]
    if on_stage is not None:
        placed = {p.query_id for p in mapped}
        on_stage("aligning regions", region_cells([q for q in queries if q.id in placed], targets,
                                                  chunk_length))
    for query in queries:
        pieces = [p for p in mapped if p.query_id == query.id]
        if pieces:
            work.add_contig(query, pieces)
    work.find_differences()
    comparison = GenomeComparison({q.id: len(q) for q in queries}, {t.id: len(t) for t in targets},
                                  list(placements), work.regions)
    rank = {t.id: k for k, t in enumerate(targets)}
    comparison.blocks = sorted(_join_abutting(work.blocks),
                               key=lambda b: (rank[b.target_id], b.target_start, b.target_end,
                                              b.query_id, b.query_start))
    comparison.differences = [replace(d, id=f"E{k}") for k, d in enumerate(sorted(
        work.events, key=lambda d: (rank[d.target_id], d.target_start, d.target_end, d.query_id,
                                    d.query_start, EVENT_KINDS.index(d.kind))), start=1)]
    comparison.variants = sorted(
        (v for region in work.regions for v in _variants(region, work)),
        key=lambda v: (rank[v.target_id], v.target_pos, v.query_id, v.query_pos, v.alt))
    comparison.blocks, comparison.copies = _continue_blocks(
        comparison.blocks, _repeat_copies(work, comparison.blocks, evalue, threads, on_stage), work.targets)
    comparison.blocks = close_seams(comparison.blocks, comparison.copies, work.queries, work.targets)
    return comparison


def _continue_blocks(blocks: list[AlignedBlock], copies: list[AlignedBlock], targets: dict
                     ) -> tuple[list[AlignedBlock], list[AlignedBlock]]:
    """Join each repeat copy shorter than :data:`CHAIN_OVERLAP` reference bases that continues a
    block to that block.

    A copy continues a block when it has the block's contig, record and strand, starts on the
    contig where the block ends (or ends where it starts) and its reference bases equal those
    right after the block's end (before its start) on the record: it is then an alignment of
    the same contig bases to those reference bases, with the same CIGAR and score. A deleted
    tandem copy (a 30 bp unit twice in the contig, seven times in the reference) leaves
    reference bases no block covers; their copy is the contig's next unit, right at a block's
    end, placed on whichever copy of the unit came first among equals: nucmer extends the
    alignment over it (its two alignments then overlap on the contig, a tandem deletion),
    where a separate copy counted one alignment and two breakpoints more than dnadiff. A
    longer copy stays one (nucmer aligns it on its own too, as :func:`is_tandem_copy` says).
    ``targets`` maps record ids to sequences. Returns the blocks and the copies left.
    """
    blocks = list(blocks)
    left = []
    for copy in copies:
        codes = targets[copy.target_id].codes
        span = copy.target_end - copy.target_start
        if span >= CHAIN_OVERLAP:
            left.append(copy)
            continue
        copied = codes[copy.target_start:copy.target_end]
        for k, b in enumerate(blocks):
            if (b.query_id, b.target_id, b.strand) != (copy.query_id, copy.target_id, copy.strand):
                continue
            forward = b.strand == "+"
            after = b.query_end == copy.query_start if forward else copy.query_end == b.query_start
            before = copy.query_end == b.query_start if forward else b.query_end == copy.query_start
            if after and np.array_equal(codes[b.target_end:b.target_end + span], copied):
                target_start, target_end = b.target_start, b.target_end + span
                runs = (*b.cigar.runs, *copy.cigar.runs)
            elif before and b.target_start >= span and \
                    np.array_equal(codes[b.target_start - span:b.target_start], copied):
                target_start, target_end = b.target_start - span, b.target_end
                runs = (*copy.cigar.runs, *b.cigar.runs)
            else:
                continue
            blocks[k] = replace(b, query_start=min(b.query_start, copy.query_start),
                                query_end=max(b.query_end, copy.query_end), target_start=target_start,
                                target_end=target_end, cigar=Cigar.from_runs(runs))
            break
        else:
            left.append(copy)
    return blocks, left


def uncovered_stretches(work, blocks: list[AlignedBlock]) -> list[tuple[Sequence, int, int]]:
    """``(reference record, start, end)`` of every stretch of a reference record outside all
    ``blocks``' reference intervals and at least ``work.min_event`` bases long (0-based,
    half-open), record by record in file order."""
    stretches = []
    for target in work.targets.values():
        covered = sorted((b.target_start, b.target_end) for b in blocks if b.target_id == target.id)
        at = 0
        for start, end in covered + [(len(target), len(target))]:
            if start - at >= work.min_event:
                stretches.append((target, at, start))
            at = max(at, end)
    return stretches


def _repeat_copies(work, blocks: list[AlignedBlock], evalue: float, threads: int | None = None,
                   on_stage: Callable[[str, int], None] | None = None) -> list[AlignedBlock]:
    """Best significant local alignment of each uncovered reference stretch to the assembly.

    Stretches are the parts of each reference record outside every block's reference
    interval, at least ``min_event`` bases long. Each is aligned (local, exact, no Z-drop)
    with every contig on both strands; the best (highest score; ties: contig order, then
    ``'+'``) is kept when its E-value against the whole assembly (BLAST's statistics, the
    placement's cutoff ``evalue``) and its identity (``min_identity``) pass. That best is the
    primary record of the stretches' local placement on the contigs
    (:func:`~gpualign_plugin.pairwise.api.place_local`, all stretches at once: score passes
    first, then one alignment per stretch, on ``threads`` CPU threads or the GPU).
    ``on_stage`` as :func:`compare_genomes`'s.
    """
    stretches = uncovered_stretches(work, blocks)
    contigs = list(work.queries.values())
    if not stretches or not contigs:
        return []
    if on_stage is not None:
        on_stage("repeat copies", 2 * sum(end - start for _, start, end in stretches)
                 * sum(len(contig) for contig in contigs))
    pieces = [Sequence(str(k), "", target.codes[start:end])
              for k, (target, start, end) in enumerate(stretches)]
    placed = place_local(pieces, contigs, work.scheme, backend=work.backend, evalue=evalue,
                         strands="both", threads=threads, device=work.device, zdrop_bits=math.inf,
                         on_progress=work.progress)
    best = {a.query_id: a for a in placed if a.is_primary and not a.is_supplementary}
    copies = []
    swap = {"I": "D", "D": "I"}
    for k, (target, start, _end) in enumerate(stretches):
        hit = best.get(str(k))
        if hit is None or hit.identity < work.min_identity:
            continue
        # The hit aligns the reference stretch (as query) to the contig: turn it around.
        runs = [(n, swap.get(op, op)) for n, op in hit.cigar.runs]
        copies.append(AlignedBlock(
            "copy", hit.target_id, target.id, hit.strand, hit.target_start, hit.target_end,
            start + hit.query_start, start + hit.query_end,
            Cigar.from_runs(runs if hit.strand == "+" else runs[::-1])))
    return copies


def chain_placements(pieces: list[Alignment]) -> list[list[Alignment]]:
    """Split one contig's placements into collinear chains, heaviest first.

    A chain holds placements on one target record and one strand whose contig and
    reference intervals run in the same order (reversed on the reference for ``'-'``),
    consecutive ones overlapping by at most :data:`CHAIN_OVERLAP` contig bases; on the
    reference the next one starts and ends after the previous one, overlapping it by at most
    :data:`CHAIN_OVERLAP` bases too. A longer overlap on the reference is a tandem duplication
    (the contig reads those bases again): the next piece starts another chain, a copy's
    region, as nucmer aligns both copies and dnadiff counts a tandem insertion. A
    chain's weight is its contig bases minus, for each link, the deletion it implies
    (reference gap minus contig gap, when positive), so a moved block does not chain across
    the reference between its origin and its new neighbours. The heaviest chain (ties: the
    one ending first in the given order), completed with the pieces that fit into it, is
    taken first, then the heaviest of the rest, and so on. Each chain is sorted by contig
    position.
    """
    left = list(pieces)
    chains = []
    while left:
        best: list[Alignment] = []
        best_weight = -1
        for key in dict.fromkeys((p.target_id, p.strand) for p in left):
            group = sorted((p for p in left if (p.target_id, p.strand) == key),
                           key=lambda p: (p.query_start, p.query_end))
            chain, weight = _heaviest_chain(group)
            if weight > best_weight:
                best, best_weight = chain, weight
        chains.append(best)
        taken = {id(p) for p in best}
        left = [p for p in left if id(p) not in taken]
    return chains


def is_tandem_copy(home: list[Alignment], placement: Alignment) -> bool:
    """Whether ``placement`` is a tandem copy inside the ``home`` chain.

    It is one when it is shorter than :data:`CHAIN_OVERLAP` contig bases and, on the home
    chain's target and strand, lies (contig bases) between two consecutive home placements,
    within :data:`CHAIN_OVERLAP` of each, with the reference bases it aligns at their junction:
    no further from it than the contig bases between the two (the length of what was inserted
    there). Such a placement reads again the reference bases next to where the contig holds
    more: a few extra copies of a short tandem unit (a 30 bp unit seven times where the
    reference has it twice). They are part of the home region's insertion, one event, as
    dnadiff reports one insertion (nucmer's clusters of 65 bases place no such copy); as
    chains of their own each was a duplication, a breakpoint pair and, where two read the same
    reference bases, a "relocation". A longer copy stays a region, as nucmer aligns it
    (:meth:`_Work._join_tandem_copies` makes the copies of one expansion one event).
    """
    p = placement
    if p.query_end - p.query_start >= CHAIN_OVERLAP or (p.target_id, p.strand) != (home[0].target_id, home[0].strand):
        return False
    for a, b in zip(home, home[1:]):
        inserted = b.query_start - a.query_end
        if a.query_end - CHAIN_OVERLAP <= p.query_start and p.query_end <= b.query_start + CHAIN_OVERLAP:
            ends = (a.target_end, b.target_start) if p.strand == "+" else (a.target_start, b.target_end)
            if min(ends) - inserted <= p.target_start and p.target_end <= max(ends) + inserted:
                return True
    return False


def _follows(a: Alignment, b: Alignment) -> bool:
    """Whether placement ``b`` can come after ``a`` in a collinear chain (same target and strand)."""
    if a.query_end > b.query_start + CHAIN_OVERLAP:
        return False
    if b.strand == "+":
        return b.target_start > a.target_start and b.target_end > a.target_end and \
            a.target_end - b.target_start <= CHAIN_OVERLAP
    return b.target_end < a.target_end and b.target_start < a.target_start and \
        b.target_end - a.target_start <= CHAIN_OVERLAP


def _heaviest_chain(group: list[Alignment]) -> tuple[list[Alignment], int]:
    """Heaviest collinear chain of placements on one target and strand (sorted by contig).

    Then every other placement of the group that fits between its neighbours (in contig
    order, :func:`_follows` both ways) joins it, heaviest first: a piece the weights left
    out but that contradicts nothing (the flank of a moved block's origin) stays home.
    """
    weight = [p.query_end - p.query_start for p in group]
    total = list(weight)
    previous = [-1] * len(group)
    for j, b in enumerate(group):
        for i in range(j):
            a = group[i]
            if not _follows(a, b):
                continue
            query_gap = b.query_start - a.query_end
            target_gap = (b.target_start - a.target_end if b.strand == "+"
                          else a.target_start - b.target_end)
            # Reference bases the link skips beyond the contig bases it skips: a deletion
            # the chain would imply (contig bases it skips are simply not counted).
            value = total[i] + weight[j] - max(0, target_gap - query_gap)
            if value > total[j]:
                total[j], previous[j] = value, i
    end = max(range(len(group)), key=lambda k: (total[k], -k))
    best = total[end]
    chain = []
    while end >= 0:
        chain.append(group[end])
        end = previous[end]
    chain.reverse()
    taken = {id(p) for p in chain}
    for piece in sorted((p for p in group if id(p) not in taken),
                        key=lambda p: -(p.query_end - p.query_start)):
        before = [p for p in chain if p.query_start < piece.query_start]
        after = [p for p in chain if p.query_start >= piece.query_start]
        if (not before or _follows(before[-1], piece)) and (not after or _follows(piece, after[0])):
            chain = before + [piece] + after
    return chain, best


def chain_anchors(chain: list[Alignment], query_start: int, query_end: int, target_start: int,
                  spacing: int) -> list[tuple[int, int]]:
    """Cut points of a chain's region: ``(oriented contig offset, window offset)`` pairs.

    The middle of each run of at least :data:`ANCHOR_RUN` ``=`` columns of the chain's
    placements is a candidate; candidates are taken in contig order when they lie at least
    ``spacing`` bases after the previous cut on both sequences (and before the region's end
    by as much), so the cuts increase on both sequences. ``query_start``, ``query_end`` and
    ``target_start`` are the region's piece and window.
    """
    cuts = []
    last_x = last_y = 0
    length = query_end - query_start
    # In a collinear chain the reference order is the order along the oriented contig.
    for placement in sorted(chain, key=lambda p: p.target_start):
        offset = 0  # along the oriented placement
        t = placement.target_start
        for run, op in placement.cigar.runs:
            if op == "=" and run >= ANCHOR_RUN:
                middle = run // 2
                if placement.strand == "+":
                    x = placement.query_start + offset + middle - query_start
                else:
                    x = query_end - placement.query_end + offset + middle
                y = t + middle - target_start
                if x - last_x >= spacing and y - last_y >= spacing and length - x >= spacing:
                    cuts.append((x, y))
                    last_x, last_y = x, y
            if op in "=XI":
                offset += run
            if op in "=XD":
                t += run
    return cuts


def anchored_syntenic(piece, window, scheme: ScoringScheme, block_penalty: int, anchors=(),
                      backend: str = "cpu", device: int = 0,
                      progress: Callable[[int], None] | None = None, threads: int = 1) -> SyntenicAlignment:
    """Syntenic alignment of ``piece`` and ``window`` through the given anchor points.

    Without anchors this is :func:`~gpualign_plugin.syntenic.api.syntenic_align`. With
    anchors ``(x, y)`` (increasing on both sequences) each chunk between neighbouring
    anchors is aligned exactly and the chunks are joined: blocks of one kind meeting at an
    anchor become one (a matching region's CIGAR is rescored as a whole; two difference
    blocks cost one block penalty). The cost falls from ``m * n`` cells to about the sum of
    the chunks' products. Anchors come from long identical runs of the placement, where
    any alignment of the region passes. ``progress`` gets DP cells as they are computed. On the
    CPU, up to ``threads`` chunks (at most :data:`CONCURRENT_CHUNKS`) are aligned at once; the
    result is the same.
    """
    bounds = [(0, 0), *anchors, (len(piece), len(window))]
    chunks = list(zip(bounds, bounds[1:]))

    def align(chunk) -> SyntenicAlignment:
        (x0, y0), (x1, y1) = chunk
        return syntenic_align(piece[x0:x1], window[y0:y1], scheme, block_penalty,
                              backend=backend, device=device, progress=progress)

    workers = min(threads, CONCURRENT_CHUNKS, len(chunks)) if backend == "cpu" else 1
    if workers > 1:
        with ThreadPoolExecutor(workers, thread_name_prefix="gpualign-chunk") as pool:
            parts = list(pool.map(align, chunks))
    else:
        parts = [align(chunk) for chunk in chunks]
    blocks = joined_blocks([SyntenicBlock(b.kind, b.query_start + x0, b.query_end + x0, b.target_start + y0,
                                          b.target_end + y0, b.score, b.cigar)
                            for ((x0, y0), _end), part in zip(chunks, parts) for b in part.blocks],
                           scheme, block_penalty)
    return SyntenicAlignment("query", "target", len(piece), len(window),
                             sum(b.score for b in blocks), block_penalty, tuple(blocks))


def joined_blocks(blocks, scheme: ScoringScheme, block_penalty: int) -> list[SyntenicBlock]:
    """``blocks`` (in alignment order) with each run of neighbours of one kind joined into one
    block: difference blocks cost one block penalty together; matching regions score the sum
    of their scores, one gap open less where a gap run of one continues in the next (the
    columns score as before, and the continued run opens once:
    :func:`~gpualign_plugin.model.column_scores`). Linear in the CIGAR runs."""
    out: list[SyntenicBlock] = []
    for kind, run in groupby(blocks, key=lambda b: b.kind):
        group = list(run)
        first, last = group[0], group[-1]
        if len(group) == 1:
            out.append(first)
            continue
        if kind == "difference":
            score = -block_penalty
        else:
            continued = sum(a.cigar.runs[-1][1] == b.cigar.runs[0][1] in "ID" for a, b in zip(group, group[1:]))
            score = sum(b.score for b in group) + scheme.gap_open * continued
        out.append(SyntenicBlock(kind, first.query_start, last.query_end, first.target_start, last.target_end,
                                 score, Cigar.from_runs([r for b in group for r in b.cigar.runs])))
    return out


def _append_joined(blocks: list, block: SyntenicBlock, scheme: ScoringScheme, block_penalty: int) -> None:
    """Append ``block`` to ``blocks``, joined with the last one when they are of one kind
    (:func:`joined_blocks`)."""
    blocks[max(0, len(blocks) - 1):] = joined_blocks([*blocks[-1:], block], scheme, block_penalty)


def trim_grown_ends(alignment: SyntenicAlignment, piece: np.ndarray, window: np.ndarray,
                    scheme: ScoringScheme, grown: tuple[bool, bool]) -> SyntenicAlignment:
    """``alignment`` (of ``piece`` against ``window``, codes) with each grown end cut back to
    where the running score of its matching region peaks.

    A region grown to its contig's end (:data:`END_EXTENSION`) makes the syntenic alignment
    take bases the placement's local alignment left out. Where those score less than nothing
    (a tail past an indel near the end, forced through as mismatches, or a contig's untrimmed
    end) they would be false SNPs; so, as nucmer leaves such an end unaligned, the columns of
    the first (``grown[0]``) or last (``grown[1]``) matching region beyond its best-scoring
    prefix (from the outer end: suffix) become a terminal difference block, the shortest such
    cut among equals; an outermost matching region that scores no more than the block penalty
    of the difference block inside it (with a matching region further in) joins that block
    first. A grown end that scores more than nothing stays aligned.
    """
    blocks = list(alignment.blocks)
    penalty = alignment.block_penalty
    for at_end in (True, False):
        index, inner = (-1, -2) if at_end else (0, 1)
        if not grown[int(at_end)]:
            continue
        # A matching region past a difference block that does not pay for the break (a few chance
        # matches after foreign bases, where the syntenic alignment must reach the window's end)
        # goes into that difference block, where a matching region lies beyond it.
        while len(blocks) >= 3 and blocks[index].kind == "match" and blocks[inner].kind == "difference" \
                and blocks[index].score <= penalty:
            first, second = (blocks[inner], blocks[index]) if at_end else (blocks[index], blocks[inner])
            blocks[inner] = SyntenicBlock("difference", first.query_start, second.query_end,
                                          first.target_start, second.target_end, -penalty)
            del blocks[index]
        if not blocks or blocks[index].kind != "match":
            continue
        block = blocks[index]
        scores = column_scores(block.cigar, piece[block.query_start:block.query_end],
                               window[block.target_start:block.target_end], scheme)
        running = np.concatenate(([0], np.cumsum(scores if at_end else scores[::-1])))
        kept = int(np.argmax(running))
        if kept == len(scores):
            continue
        start, end = (0, kept) if at_end else (len(scores) - kept, len(scores))
        cigar, query_before, target_before = cigar_columns(block.cigar, start, end)
        qs, ts = block.query_start + query_before, block.target_start + target_before
        qe, te = qs + cigar.query_length(), ts + cigar.target_length()
        pieces = [SyntenicBlock("difference", block.query_start, qs, block.target_start, ts, -penalty),
                  SyntenicBlock("match", qs, qe, ts, te, score_cigar(cigar, piece[qs:qe], window[ts:te], scheme),
                                cigar),
                  SyntenicBlock("difference", qe, block.query_end, te, block.target_end, -penalty)]
        rest = blocks[:-1] if at_end else blocks[1:]
        # The cut side and a match with no column kept are empty.
        blocks = joined_blocks([b for b in (rest + pieces if at_end else pieces + rest)
                                if b.query_span or b.target_span], scheme, penalty)
    if blocks == list(alignment.blocks):
        return alignment
    return replace(alignment, score=sum(b.score for b in blocks), blocks=tuple(blocks))


def join_small_differences(alignment: SyntenicAlignment, piece: np.ndarray, window: np.ndarray,
                           scheme: ScoringScheme, min_event: int) -> SyntenicAlignment:
    """``alignment`` (of ``piece`` against ``window``, codes) with each interior difference block
    whose sides are both shorter than ``min_event`` aligned through: its two sides aligned
    globally (exact, CPU; one side empty: one gap) and joined with the matching regions around
    it into one (:func:`joined_blocks`).

    The syntenic alignment prefers a block break to a gap longer than about
    ``block_penalty / extend`` bases (23 with the DNA defaults), so an indel of 23 to 49 bases
    split a region's alignment in two (two breakpoints and an insertion in the report) where
    nucmer aligns through it and dnadiff counts an indel of one alignment. A difference with a
    side of ``min_event`` bases or more stays a difference block: an event (insertion,
    deletion, replacement, inversion, or half of a relocation). nucmer aligns through indels
    up to about 85 bases (measured: through 60 and 80, broken at 89 and more), so
    ``--min-event 85`` gives dnadiff's figures for those too.
    """
    blocks = alignment.blocks
    if not any(_aligned_through(block, k, len(blocks), min_event) for k, block in enumerate(blocks)):
        return alignment
    parts: list[SyntenicBlock] = []
    for k, block in enumerate(blocks):
        if _aligned_through(block, k, len(blocks), min_event):
            qs, qe, ts, te = block.query_start, block.query_end, block.target_start, block.target_end
            if qe == qs or te == ts:
                cigar = Cigar.from_runs([(qe - qs, "I"), (te - ts, "D")])
            else:
                cigar = align_sequences(Sequence("query", "", piece[qs:qe]), Sequence("target", "", window[ts:te]),
                                        scheme, "global").cigar
            block = SyntenicBlock("match", qs, qe, ts, te, score_cigar(cigar, piece[qs:qe], window[ts:te], scheme),
                                  cigar)
        parts.append(block)
    joined = joined_blocks(parts, scheme, alignment.block_penalty)
    return replace(alignment, score=sum(b.score for b in joined), blocks=tuple(joined))


def widen_inverted_blocks(alignment: SyntenicAlignment, piece: np.ndarray, window: np.ndarray,
                          scheme: ScoringScheme, min_event: int) -> SyntenicAlignment:
    """``alignment`` (of ``piece`` against ``window``, DNA codes) with the edges of each interior
    difference block that reads better inverted moved into it.

    Where a block of ``min_event`` bases or more on both sides is inverted (piece bases
    ``[a, b)`` the reverse complement of window bases ``[c, d)``), the matching regions around
    it may have taken a few of its edge bases: with a mismatch every third base, or a gap, their
    columns still score more than nothing, so the local placement and the syntenic alignment
    keep them, and they were false SNPs and indels at the edges of the inversion (dnadiff, whose
    nucmer stops there, reports none). The last ``p`` columns of the matching region before the
    block give up ``x`` piece and ``y`` window bases, the first ``q`` columns of the one after it
    ``x2`` and ``y2``; the block then grows to ``[a - x, b + x2)`` and ``[c - y, d + y2)``, which
    the inverted alignment goes on through with matches when ``x == y2``, ``x2 == y``, piece
    base ``a - 1 - i`` complements window base ``d + i`` for ``i < x`` and piece base ``b + i``
    complements window base ``c - 1 - i`` for ``i < x2``. Of the cuts that leave both matching
    regions ending in aligned columns (at most :data:`EDGE_REACH` columns each), the one that
    gains most (those matches minus the given-up columns' scores; the fewest columns among
    equals) is taken if it gains anything. A block that reads no better inverted keeps its edges.
    """
    if not scheme.is_dna:
        return alignment
    blocks = list(alignment.blocks)
    match = np.diagonal(scheme.matrix).astype(np.int64)
    for index in range(1, len(blocks) - 1):
        before, block, after = blocks[index - 1:index + 2]
        if (block.kind != "difference" or before.kind != "match" or after.kind != "match"
                or min(block.query_span, block.target_span) < min_event):
            continue
        a, b, c, d = block.query_start, block.query_end, block.target_start, block.target_end
        left, right = piece[a - 1::-1] if a else piece[:0], piece[b:]
        runs = []  # complementary bases at the block's two inverted seams
        for bases, facing in ((left, window[d:]), (right, window[c - 1::-1] if c else window[:0])):
            n = min(EDGE_REACH, len(bases), len(facing))
            same = (bases[:n] < 4) & (3 - bases[:n].astype(np.int16) == facing[:n])
            runs.append(int(np.argmin(np.append(same, False))))
        tail_ops, head_ops = column_ops(before.cigar)[::-1], column_ops(after.cigar)
        tail_scores = column_scores(before.cigar, piece[before.query_start:a], window[before.target_start:c],
                                    scheme)[::-1]
        head_scores = column_scores(after.cigar, piece[b:after.query_end], window[d:after.target_end], scheme)
        cuts = []
        for ops, scores in ((tail_ops, tail_scores), (head_ops, head_scores)):
            n = min(EDGE_REACH, len(ops) - 1)
            # For p columns given up (p = 0..n): piece bases, window bases, score; kept if the
            # column left next to the cut is aligned.
            piece_bases = np.concatenate(([0], np.cumsum(ops[:n] != ord("D"))))
            window_bases = np.concatenate(([0], np.cumsum(ops[:n] != ord("I"))))
            given = np.concatenate(([0], np.cumsum(scores[:n])))
            aligned = (ops[:n + 1] == ord("=")) | (ops[:n + 1] == ord("X"))
            cuts.append([(p, int(piece_bases[p]), int(window_bases[p]), int(given[p]))
                         for p in range(n + 1) if aligned[p]])
        gain_left = np.concatenate(([0], np.cumsum(match[window[d:d + runs[0]]])))
        gain_right = np.concatenate(([0], np.cumsum(match[window[c - runs[1]:c][::-1]])))
        best = (0, 0, None)
        for p, x, y, lost_before in cuts[0]:
            for q, x2, y2, lost_after in cuts[1]:
                if x != y2 or x2 != y or x > runs[0] or x2 > runs[1]:
                    continue
                gain = int(gain_left[x] + gain_right[x2]) - lost_before - lost_after
                if gain > best[0] or (gain == best[0] and best[2] is not None and p + q < sum(best[2][:2])):
                    best = (gain, p + q, (p, q, x, y, x2, y2))
        if best[2] is None:
            continue
        p, q, x, y, x2, y2 = best[2]
        kept_before, _, _ = cigar_columns(before.cigar, 0, len(tail_ops) - p)
        kept_after, _, _ = cigar_columns(after.cigar, q, len(head_ops))
        blocks[index - 1] = replace(before, query_end=a - x, target_end=c - y, cigar=kept_before,
                                    score=score_cigar(kept_before, piece[before.query_start:a - x],
                                                      window[before.target_start:c - y], scheme))
        blocks[index] = replace(block, query_start=a - x, query_end=b + x2, target_start=c - y, target_end=d + y2)
        blocks[index + 1] = replace(after, query_start=b + x2, target_start=d + y2, cigar=kept_after,
                                    score=score_cigar(kept_after, piece[b + x2:after.query_end],
                                                      window[d + y2:after.target_end], scheme))
    if blocks == list(alignment.blocks):
        return alignment
    return replace(alignment, score=sum(b.score for b in blocks), blocks=tuple(blocks))


def yield_claimed_columns(alignment: SyntenicAlignment, piece: np.ndarray, window: np.ndarray,
                          scheme: ScoringScheme, claimed: np.ndarray) -> SyntenicAlignment:
    """``alignment`` (of ``piece`` against ``window``) without the imperfect columns it holds on
    piece bases another region aligns.

    ``claimed`` (``bool`` per piece base) marks the bases that placements of the contig's other
    chains align: an inverted block's piece, say, which the syntenic alignment of the home
    region leaves as a difference block but whose edges its matching regions may reach into
    with mismatches and gaps that still score more than nothing (``6=3X3=1D2=2X`` into a 300
    bp inversion of lambda), or which a short matching region inside it crosses (a palindrome
    in an inverted block): false SNPs and indels, an alignment and two breakpoints more than
    dnadiff. A matching region next to a difference block gives it its edge columns on claimed
    bases up to the last one that is not ``=`` (and any gap run right after it); a matching
    region between two difference blocks whose piece bases are all claimed becomes part of
    them. The other region aligns those bases.
    """
    blocks = list(alignment.blocks)
    if not claimed.any() or len(blocks) < 2:
        return alignment
    penalty = alignment.block_penalty
    out: list[SyntenicBlock] = []
    for index, block in enumerate(blocks):
        if block.kind != "match":
            out.append(block)
            continue
        left = index > 0 and blocks[index - 1].kind == "difference"
        right = index + 1 < len(blocks) and blocks[index + 1].kind == "difference"
        if left and right and claimed[block.query_start:block.query_end].all():
            _append_joined(out, SyntenicBlock("difference", block.query_start, block.query_end, block.target_start,
                                              block.target_end, -penalty), scheme, penalty)
            continue
        ops = column_ops(block.cigar)
        first, last = 0, len(ops)
        if left:
            first = _claimed_edge(ops, claimed[block.query_start:block.query_end])
        if right:
            last = len(ops) - _claimed_edge(ops[::-1], claimed[block.query_start:block.query_end][::-1])
        if first >= last:
            _append_joined(out, SyntenicBlock("difference", block.query_start, block.query_end, block.target_start,
                                              block.target_end, -penalty), scheme, penalty)
            continue
        if (first, last) == (0, len(ops)):
            out.append(block)
            continue
        cigar, query_before, target_before = cigar_columns(block.cigar, first, last)
        qs, ts = block.query_start + query_before, block.target_start + target_before
        qe, te = qs + cigar.query_length(), ts + cigar.target_length()
        for part in (SyntenicBlock("difference", block.query_start, qs, block.target_start, ts, -penalty),
                     SyntenicBlock("match", qs, qe, ts, te, score_cigar(cigar, piece[qs:qe], window[ts:te], scheme),
                                   cigar),
                     SyntenicBlock("difference", qe, block.query_end, te, block.target_end, -penalty)):
            if part.query_span or part.target_span:
                _append_joined(out, part, scheme, penalty)
    if out == blocks:
        return alignment
    return replace(alignment, score=sum(b.score for b in out), blocks=tuple(out))


def _claimed_edge(ops: np.ndarray, claimed: np.ndarray) -> int:
    """How many of the columns ``ops`` (read from one edge of a matching region) to give up:
    through the last column that is not ``=`` among those on claimed piece bases (``claimed``,
    read from the same edge; a deletion column counts on the base after it), or all of those
    when a gap follows them, and any gap columns right after the cut."""
    gaps = (ord("I"), ord("D"))
    cut = at = k = 0
    while k < len(ops) and at < len(claimed) and claimed[at]:
        if ops[k] != ord("="):
            cut = k + 1
        if ops[k] != ord("D"):
            at += 1
        k += 1
    if k < len(ops) and ops[k] in gaps:
        cut = k
    while cut < len(ops) and ops[cut] in gaps:
        cut += 1
    return cut


def _aligned_through(block: SyntenicBlock, index: int, count: int, min_event: int) -> bool:
    """Whether :func:`join_small_differences` aligns through ``block`` (``index`` of ``count``)."""
    return (block.kind == "difference" and 0 < index < count - 1
            and max(block.query_span, block.target_span) < min_event)


class _Work:
    """The regions, blocks and events of one comparison while they are being built."""

    def __init__(self, queries, targets, scheme, block_penalty, min_event, min_identity,
                 min_coverage, backend, device, chunk_length, progress=None, threads=1):
        self.queries = {q.id: q for q in queries}
        self.targets = {t.id: t for t in targets}
        self.scheme = scheme
        self.block_penalty = block_penalty
        self.min_event = min_event
        self.min_identity = min_identity
        self.min_coverage = min_coverage
        self.backend = backend
        self.device = device
        self.chunk_length = chunk_length
        self.progress = progress
        self.threads = threads
        self.regions: list[Region] = []
        self.blocks: list[AlignedBlock] = []
        self.events: list[Difference] = []
        self.extended: dict[str, tuple[bool, bool]] = {}
        self.tandem_copies: dict[str, list[Alignment]] = {}

    # -- regions --------------------------------------------------------------------------
    def add_region(self, query_id, target_id, strand, query_start, query_end, target_start,
                   target_end, role, parent="", anchors=(), grown=(False, False), claimed=()) -> Region:
        """Align a contig piece to a reference window and keep the region and its blocks.

        ``anchors`` (oriented piece offset, window offset) cut the alignment into chunks
        (see :func:`anchored_syntenic`). ``grown`` says which ends of the oriented piece were
        extended to the contig's end: those are cut back where their score peaks
        (:func:`trim_grown_ends`) and their terminal blocks are no events. ``claimed``: contig
        intervals (forward strand) that other chains' placements align
        (:func:`yield_claimed_columns`).
        """
        piece = self.queries[query_id].codes[query_start:query_end]
        if strand == "-":
            piece = reverse_complement_codes(piece)
        window = self.targets[target_id].codes[target_start:target_end]
        alignment = trim_grown_ends(anchored_syntenic(piece, window, self.scheme, self.block_penalty, anchors,
                                                      self.backend, self.device, self.progress, self.threads),
                                    piece, window, self.scheme, grown)
        alignment = join_small_differences(alignment, piece, window, self.scheme, self.min_event)
        alignment = widen_inverted_blocks(alignment, piece, window, self.scheme, self.min_event)
        if claimed:
            mask = np.zeros(len(piece), dtype=bool)
            for start, end in claimed:
                lo, hi = max(start, query_start), min(end, query_end)
                if lo < hi:
                    if strand == "+":
                        mask[lo - query_start:hi - query_start] = True
                    else:
                        mask[query_end - hi:query_end - lo] = True
            alignment = yield_claimed_columns(alignment, piece, window, self.scheme, mask)
        region = Region(f"R{len(self.regions) + 1}", query_id, target_id, strand, query_start,
                        query_end, target_start, target_end, alignment, role, parent)
        self.regions.append(region)
        self.extended[region.id] = grown
        for block in alignment.matching_regions:
            qs, qe = region.query_interval(block.query_start, block.query_end)
            self.blocks.append(AlignedBlock(region.id, query_id, target_id, strand, qs, qe,
                                            target_start + block.target_start,
                                            target_start + block.target_end, block.cigar))
        return region

    def add_contig(self, query: Sequence, pieces: list[Alignment]) -> None:
        """Chain a contig's placements and align each chain (the first is the home); chains
        of tandem copies (:func:`is_tandem_copy`) make no region of their own."""
        chains = chain_placements(pieces)
        copies = [chain for chain in chains[1:] if all(is_tandem_copy(chains[0], p) for p in chain)]
        chains = [chain for chain in chains if not any(chain is c for c in copies)]
        home = None
        placed_regions = []
        for chain in chains:
            first, last = chain[0], chain[-1]
            target_length = len(self.targets[first.target_id])
            q_start, q_end = first.query_start, last.query_end
            if first.strand == "+":
                t_start, t_end = first.target_start, last.target_end
                room_start, room_end = t_start, target_length - t_end
            else:
                t_start, t_end = last.target_start, first.target_end
                room_start, room_end = target_length - t_end, t_start
            placed = (q_start, q_end, t_start, t_end)
            # Extend to the contig's ends where they are close and the reference goes on.
            grow_start = q_start if q_start <= END_EXTENSION else 0
            grow_start = min(grow_start, room_start)
            grow_end = len(query) - q_end if len(query) - q_end <= END_EXTENSION else 0
            grow_end = min(grow_end, room_end)
            q_start -= grow_start
            q_end += grow_end
            if first.strand == "+":
                t_start, t_end = t_start - grow_start, t_end + grow_end
            else:
                t_start, t_end = t_start - grow_end, t_end + grow_start
            if home is None:
                role = "home"
            elif first.target_id != home.target_id:
                role = "translocation"
            elif first.strand != home.strand:
                role = "inversion"
            else:
                role = "relocation"
            anchors = chain_anchors(chain, q_start, q_end, t_start, self.chunk_length)
            # Oriented ends: the first and last blocks of an extended side are not events.
            grown = (grow_start > 0, grow_end > 0) if first.strand == "+" else (grow_end > 0, grow_start > 0)
            claimed = [(p.query_start, p.query_end) for other in chains if other is not chain for p in other]
            region = self.add_region(query.id, first.target_id, first.strand, q_start, q_end,
                                     t_start, t_end, role, anchors=anchors, grown=grown, claimed=claimed)
            if home is None:
                home = region
                self.tandem_copies[region.id] = [p for chain in copies for p in chain]
            placed_regions.append((region, role, placed))
        self.extend_over_matches(query.id)
        for region, role, placed in placed_regions[1:]:
            # The event is what the region aligns, not the window grown toward the contig's end.
            q_start, q_end, t_start, t_end = _aligned_extent(self.blocks, region.id) or placed
            kind = role
            copied = self._copied_part(home, region) if role in ("relocation", "inversion") else None
            if copied is not None:
                kind, (q_start, q_end, t_start, t_end) = "duplication", copied
            self.events.append(Difference(
                "", kind, query.id, q_start, q_end, region.target_id, t_start, t_end,
                "-" if region.strand != home.strand else "+", home.id, region.id,
                _identity(self.blocks, region.id)))

    def extend_over_matches(self, query_id: str) -> None:
        """Extend each matching region of one contig over identical bases (A, C, G, T) next to
        it on both sequences that no matching region of the contig aligns, as nucmer extends
        its alignments.

        Where two placements meet on the contig, the bases at the seam may match both: the
        local alignment found first takes them, and the other region (a tandem copy's, say)
        stops short of the seam on the contig while the first one's region has them in a
        difference block. Those few bases are then aligned by no region, and the two regions
        no longer abut on the contig, which for dnadiff makes a tandem insertion a plain one.
        """
        if not self.scheme.is_dna:
            return
        query = self.queries[query_id].codes
        mine = sorted((k for k, b in enumerate(self.blocks) if b.query_id == query_id),
                      key=lambda k: self.blocks[k].query_start)
        covered = np.zeros(len(query), dtype=bool)
        for k in mine:
            covered[self.blocks[k].query_start:self.blocks[k].query_end] = True
        for k in mine:
            b = self.blocks[k]
            grown = grown_block(b, query, self.targets[b.target_id].codes, blocked=covered)
            if grown is not b:
                covered[grown.query_start:grown.query_end] = True
                self.blocks[k] = grown

    def _copied_part(self, home: Region, region: Region) -> tuple[int, int, int, int] | None:
        """``(query_start, query_end, target_start, target_end)`` of the part of ``region`` whose
        reference bases the home region's matching regions also align, where that is at least
        ``min_event`` bases or all but fewer than ``min_event`` of the region's: a chain of the
        same contig there is a copy of bases the contig also holds at their place (a tandem or
        dispersed duplication), not a move. The contig interval is that of the region's columns
        on those reference bases. None otherwise."""
        mine = [b for b in self.blocks if b.region == region.id]
        if not mine:
            return None
        start, end = min(b.target_start for b in mine), max(b.target_end for b in mine)
        shared = np.zeros(end - start, dtype=bool)
        for b in self.blocks:
            lo, hi = max(b.target_start, start), min(b.target_end, end)
            if b.region == home.id and b.target_id == region.target_id and lo < hi:
                shared[lo - start:hi - start] = True
        aligned = np.zeros(end - start, dtype=bool)
        for b in mine:
            aligned[b.target_start - start:b.target_end - start] = True
        copied = np.flatnonzero(shared & aligned)
        if not len(copied) or (len(copied) < self.min_event and
                               np.count_nonzero(aligned) - len(copied) >= self.min_event):
            return None
        t_start, t_end = start + int(copied[0]), start + int(copied[-1]) + 1
        spans = [_query_span(b, t_start, t_end) for b in mine]
        spans = [span for span in spans if span is not None]
        return min(q for q, _ in spans), max(q for _, q in spans), t_start, t_end

    # -- differences ----------------------------------------------------------------------
    def find_differences(self) -> None:
        """Classify the difference blocks of every placement region, then pair relocations."""
        query_cover = {}
        target_cover = {}
        for block in self.blocks:
            query_cover.setdefault(block.query_id, []).append(
                (block.query_start, block.query_end, block.region))
            target_cover.setdefault(block.target_id, []).append(
                (block.target_start, block.target_end, block.region))
        insertions, deletions = [], []
        for region in list(self.regions):
            blocks = region.alignment.blocks
            start_free, end_free = self.extended[region.id]
            for index, block in enumerate(blocks):
                if block.kind != "difference":
                    continue
                if (index == 0 and start_free) or (index == len(blocks) - 1 and end_free):
                    continue
                qs, qe = region.query_interval(block.query_start, block.query_end)
                ts = region.target_start + block.target_start
                te = region.target_start + block.target_end
                query_left = _uncovered(qs, qe, query_cover.get(region.query_id, ()), region.id)
                target_left = _uncovered(ts, te, target_cover.get(region.target_id, ()),
                                         region.id)
                self._note_insertion_point(region, qs, qe, ts)
                has_query = query_left[2] >= self.min_event
                has_target = target_left[2] >= self.min_event
                if has_query and has_target:
                    self._inversion_or_replacement(region, query_left, target_left)
                elif has_query:
                    insertions.append((region, query_left, ts))
                elif has_target:
                    deletions.append((region, target_left, qs if region.strand == "+" else qe))
                elif max(qe - qs, te - ts) == max(query_left[2], target_left[2]):
                    # Nothing of it aligned elsewhere: a cluster of point differences.
                    self.events.append(Difference("", "small", region.query_id, qs, qe,
                                                  region.target_id, ts, te, "+", region.id))
        self._pair_relocations(insertions, deletions)
        self._join_tandem_copies()

    def _join_tandem_copies(self) -> None:
        """Join duplications of one contig that abut on it (within ``min_event`` bases) and copy
        overlapping or abutting reference bases in the same orientation: the copies of one
        tandem expansion (three extra copies of a 100 bp unit placed as a 200 and a 100 bp
        piece) are one event, whose reference interval is the bases copied."""
        joined: list[Difference] = []
        for event in sorted((e for e in self.events if e.kind == "duplication"),
                            key=lambda e: (e.query_id, e.query_start, e.query_end)):
            last = joined[-1] if joined else None
            if (last is not None and (last.query_id, last.target_id, last.orientation)
                    == (event.query_id, event.target_id, event.orientation)
                    and event.query_start - last.query_end <= self.min_event
                    and event.target_start <= last.target_end and last.target_start <= event.target_end):
                spans = last.query_span + event.query_span
                joined[-1] = replace(
                    last, query_end=max(last.query_end, event.query_end),
                    target_start=min(last.target_start, event.target_start),
                    target_end=max(last.target_end, event.target_end),
                    identity=(last.identity * last.query_span + event.identity * event.query_span) / spans,
                    inserted_at=last.inserted_at if last.inserted_at >= 0 else event.inserted_at)
            else:
                joined.append(event)
        self.events = [e for e in self.events if e.kind != "duplication"] + \
            [e if e.inserted_at >= 0 else replace(e, inserted_at=self._junction(e)) for e in joined]

    def _junction(self, event: Difference) -> int:
        """The reference position where ``event``'s contig bases sit between the matching
        regions of its region (the home) that end or start next to them on the contig (within
        ``min_event`` bases); -1 when none does. For copies that abut the home's blocks instead
        of lying in a difference block of it."""
        for b in self.blocks:
            if b.region != event.region or b.query_id != event.query_id:
                continue
            if abs(b.query_end - event.query_start) <= self.min_event:
                return b.target_end if b.strand == "+" else b.target_start
            if abs(b.query_start - event.query_end) <= self.min_event:
                return b.target_start if b.strand == "+" else b.target_end
        return -1

    def _note_insertion_point(self, region, qs, qe, ts) -> None:
        """Where a relocated or duplicated chain of the same contig sits in ``region``'s
        reference window."""
        for k, event in enumerate(self.events):
            if (event.kind in ("relocation", "duplication") and event.region == region.id
                    and event.inserted_at < 0
                    and event.target_id == region.target_id
                    and min(qe, event.query_end) - max(qs, event.query_start)
                    >= min(self.min_event, event.query_span)):
                self.events[k] = replace(event, inserted_at=ts)

    def _inversion_or_replacement(self, region, query_left, target_left) -> None:
        qs, qe, _ = query_left
        ts, te, _ = target_left
        inverted = "-" if region.strand == "+" else "+"
        if self._aligns(region.query_id, qs, qe, inverted, region.target_id, ts, te):
            nested = self.add_region(region.query_id, region.target_id, inverted, qs, qe, ts, te,
                                     "inversion", region.id)
            self.events.append(Difference("", "inversion", region.query_id, qs, qe,
                                          region.target_id, ts, te, "-", region.id, nested.id,
                                          _identity(self.blocks, nested.id)))
        else:
            self.events.append(Difference("", "replacement", region.query_id, qs, qe,
                                          region.target_id, ts, te, "+", region.id))

    def _pair_relocations(self, insertions, deletions) -> None:
        """Pair each insertion with the first unpaired deletion (reference order) it aligns to."""
        deletions.sort(key=lambda item: (item[0].target_id, item[1][0]))
        paired = set()
        for region, (qs, qe, _), junction in insertions:
            copies = [p for p in self.tandem_copies.get(region.id, ())
                      if 2 * (min(qe, p.query_end) - max(qs, p.query_start)) > min(qe - qs, p.query_end - p.query_start)]
            if copies:
                # Extra copies of the reference bases at the junction: a tandem expansion.
                self.events.append(Difference(
                    "", "duplication", region.query_id, qs, qe, region.target_id,
                    min(p.target_start for p in copies), max(p.target_end for p in copies), "+",
                    region.id, region.id,
                    100.0 * sum(p.matches for p in copies) / sum(p.columns for p in copies), junction))
                continue
            found = False
            for index, (other, (ts, te, _), _) in enumerate(deletions):
                if index in paired or 2 * min(qe - qs, te - ts) < max(qe - qs, te - ts):
                    continue  # a moved block keeps its length (within a factor of 2)
                for strand in (region.strand, "-" if region.strand == "+" else "+"):
                    if self._aligns(region.query_id, qs, qe, strand, other.target_id, ts, te):
                        paired.add(index)
                        nested = self.add_region(region.query_id, other.target_id, strand, qs,
                                                 qe, ts, te, "relocation", region.id)
                        self.events.append(Difference(
                            "", "relocation", region.query_id, qs, qe, other.target_id, ts, te,
                            "+" if strand == region.strand else "-", region.id, nested.id,
                            _identity(self.blocks, nested.id),
                            junction if other.target_id == region.target_id else -1))
                        found = True
                        break
                if found:
                    break
            if not found:
                self.events.append(Difference("", "insertion", region.query_id, qs, qe,
                                              region.target_id, junction, junction, "+",
                                              region.id))
        for index, (region, (ts, te, _), junction) in enumerate(deletions):
            if index not in paired:
                self.events.append(Difference("", "deletion", region.query_id, junction,
                                              junction, region.target_id, ts, te, "+",
                                              region.id))

    def _aligns(self, query_id, qs, qe, strand, target_id, ts, te) -> bool:
        """Whether the contig piece (on ``strand``) aligns to the reference piece (module notes)."""
        piece = Sequence(query_id, "", self.queries[query_id].codes[qs:qe])
        window = Sequence(target_id, "", self.targets[target_id].codes[ts:te])
        result = align_sequences(piece, window, self.scheme, "local", strand=strand,
                                 backend=self.backend, device=self.device)
        if result is None:
            return False
        from gpualign_plugin.pairwise.api import low_complexity_mask  # Numba: loaded where needed

        simple = int(low_complexity_mask(piece.codes)[result.query_start:result.query_end].sum())
        covered = min(result.query_end - result.query_start - simple, result.target_end - result.target_start)
        return (covered >= self.min_coverage * min(len(piece), len(window))
                and result.matches >= self.min_identity * result.columns)


def _uncovered(start: int, end: int, cover, own: str) -> tuple[int, int, int]:
    """``(first, end, bases)`` of ``[start, end)`` that no interval of another region covers."""
    if end <= start:
        return start, start, 0
    free = np.ones(end - start, dtype=bool)
    for s, e, region in cover:
        if region != own and s < end and e > start:
            free[max(s, start) - start:min(e, end) - start] = False
    where = np.flatnonzero(free)
    if not len(where):
        return start, start, 0
    return start + int(where[0]), start + int(where[-1]) + 1, int(len(where))


def _join_abutting(blocks: list[AlignedBlock]) -> list[AlignedBlock]:
    """The blocks, those of different regions that abut on both sequences (same contig,
    record and strand: one collinear stretch) joined into one, under the first one's region.

    Blocks of one region are separated by difference blocks; two that meet end to end on the
    contig and on the reference come from two regions, such as a tandem copy's piece and the
    piece before it, and are one alignment for nucmer (and so for dnadiff's figures).
    """
    def end_key(b: AlignedBlock) -> tuple:
        return b.query_id, b.target_id, b.strand, b.target_end, \
            b.query_end if b.strand == "+" else b.query_start

    joined: list[AlignedBlock] = []
    open_ends: dict = {}  # end_key of a joined block -> its index
    for block in sorted(blocks, key=lambda b: (b.target_id, b.target_start, b.query_id)):
        key = (block.query_id, block.target_id, block.strand, block.target_start,
               block.query_start if block.strand == "+" else block.query_end)
        previous = open_ends.pop(key, None)
        if previous is None:
            previous = len(joined)
            joined.append(block)
        else:
            a = joined[previous]
            joined[previous] = replace(
                a, query_start=min(a.query_start, block.query_start),
                query_end=max(a.query_end, block.query_end), target_end=block.target_end,
                cigar=Cigar.from_runs(a.cigar.runs + block.cigar.runs))
        open_ends[end_key(joined[previous])] = previous
    return joined


def _aligned_extent(blocks: list[AlignedBlock], region_id: str) -> tuple[int, int, int, int] | None:
    """``(query_start, query_end, target_start, target_end)`` (0-based, half-open) spanned by the
    matching regions of one region, or None where it has none."""
    mine = [b for b in blocks if b.region == region_id]
    if not mine:
        return None
    return (min(b.query_start for b in mine), max(b.query_end for b in mine),
            min(b.target_start for b in mine), max(b.target_end for b in mine))


def _query_span(block: AlignedBlock, target_start: int, target_end: int) -> tuple[int, int] | None:
    """Contig interval (forward strand, half-open) of the columns of ``block`` whose reference
    positions lie in ``[target_start, target_end)``, or None where it has none."""
    ops = column_ops(block.cigar)
    target_at = block.target_start + np.cumsum(ops != ord("I")) - (ops != ord("I"))  # before each column
    query_taken = np.cumsum(ops != ord("D"))
    inside = np.flatnonzero((target_at >= target_start) & (target_at < target_end) & (ops != ord("I")))
    if not len(inside):
        return None
    before = int(query_taken[inside[0]] - (ops[inside[0]] != ord("D")))  # contig bases before the first column
    through = int(query_taken[inside[-1]])
    if block.strand == "+":
        return block.query_start + before, block.query_start + through
    return block.query_end - through, block.query_end - before


def _identity(blocks: list[AlignedBlock], region_id: str) -> float:
    """Identity (percent) over the matching regions of one region."""
    mine = [b for b in blocks if b.region == region_id]
    columns = sum(b.columns for b in mine)
    return 100.0 * sum(b.matches for b in mine) / columns if columns else 0.0


IUPAC_BASES = {"A": "A", "C": "C", "G": "G", "T": "T", "U": "T", "R": "AG", "Y": "CT", "S": "CG",
               "W": "AT", "K": "GT", "M": "AC", "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG"}
"""The bases each nucleotide letter stands for (N and X: any, so not listed)."""


def allowed_by_code(reference_base: str, contig_base: str) -> bool:
    """Whether show-snps takes a mismatch column for no SNP (MUMmer's ``CompareIUPAC``).

    True when either letter is N or X (or another letter that is no nucleotide code), when the
    contig letter stands for every base the reference letter does (A against R, R against D),
    or when the contig has one base that the reference letter allows (G against R).
    """
    reference = IUPAC_BASES.get(reference_base.upper())
    contig = IUPAC_BASES.get(contig_base.upper())
    if reference is None or contig is None:
        return True
    return set(reference) <= set(contig) or (len(contig) == 1 and contig in reference)


def _variants(region: Region, work: _Work):
    """SNPs and indels of a region's matching regions, with dnadiff's buffer.

    A mismatch column whose letters an IUPAC code reconciles (:func:`allowed_by_code`) is no
    SNP, as in show-snps, and so takes no other variant's buffer either.
    """
    letters = work.scheme.alphabet.letters
    query = work.queries[region.query_id].codes[region.query_start:region.query_end]
    if region.strand == "-":
        query = reverse_complement_codes(query)
    target = work.targets[region.target_id].codes
    for block in region.alignment.matching_regions:
        qi = block.query_start
        ti = region.target_start + block.target_start
        found = []  # (reference position, REF, ALT, oriented contig position)
        for length, op in block.cigar.runs:
            if op == "=":
                qi += length
                ti += length
            elif op == "X":
                for k in range(length):
                    ref, alt = letters[target[ti + k]], letters[query[qi + k]]
                    if not allowed_by_code(ref, alt):
                        found.append((ti + k, ref, alt, qi + k))
                qi += length
                ti += length
            elif op == "D":
                found.append((ti, "".join(letters[c] for c in target[ti:ti + length]), "", qi))
                ti += length
            else:
                found.append((ti, "", "".join(letters[c] for c in query[qi:qi + length]), qi))
                qi += length
        buffers = _buffers(found, region.target_start + block.target_start,
                           region.target_start + block.target_end)
        for (tpos, ref, alt, qpos), buffer in zip(found, buffers):
            if ref and not alt:
                # A deletion has no contig base: name the next one (the previous one when the
                # oriented contig runs backwards, so the position is on the forward strand).
                query_pos = region.query_position(qpos) if region.strand == "+" else \
                    region.query_position(qpos - 1) if qpos > 0 else region.query_position(0)
            elif region.strand == "+":
                query_pos = region.query_position(qpos)
            else:
                query_pos = region.query_position(qpos + max(1, len(alt)) - 1)
            yield Variant(region.target_id, tpos, ref, alt, region.query_id, query_pos,
                          region.strand, region.id, buffer)


def _buffers(found, start: int, end: int) -> list[int]:
    """show-snps' ``[BUFF]`` (sorted by reference) of each variant of one matching region.

    show-snps lists every indel base as an entry at a reference position (1-based): a deleted
    base at its own position, every inserted base at the position of the reference base
    before it. An entry's buffer is one plus its distance to the nearer end of the alignment,
    or less, its distance to the previous or next entry. A variant's buffer is the least of
    its entries' (a longer indel has entries 0 or 1 apart). ``start``, ``end``: the matching
    region on the reference, 0-based half-open.
    """
    entries = []  # (1-based reference position, variant index)
    for index, (tpos, ref, alt, _) in enumerate(found):
        if ref:
            entries += [(tpos + 1 + k, index) for k in range(len(ref))]
        else:
            entries += [(tpos, index)] * len(alt)
    buffers = [None] * len(found)
    low, high = start + 1, end
    for k, (position, index) in enumerate(entries):
        buffer = 1 + min(position - low, high - position)
        if k:
            buffer = min(buffer, position - entries[k - 1][0])
        if k + 1 < len(entries):
            buffer = min(buffer, entries[k + 1][0] - position)
        buffers[index] = buffer if buffers[index] is None else min(buffers[index], buffer)
    return buffers
