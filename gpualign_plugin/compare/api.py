"""Genome comparison in the spirit of MUMmer's dnadiff, from syntenic alignments.

A syntenic alignment (:class:`~gpualign_plugin.model.SyntenicAlignment`) tiles a query
record and a reference record with matching regions and difference blocks. This module
counts what the matching regions hold (aligned bases, identity, SNPs, indels) and
classifies each difference block:

``deletion``
    Reference bases with (almost) no query bases opposite: absent from the query.
``insertion``
    Query bases with (almost) no reference bases opposite: absent from the reference.
``inversion``
    Both sides present, and the query side aligns to the reverse complement of the
    reference side.
``relocation``
    A deletion and an insertion whose sequences align to each other on the plus strand
    (a block moved elsewhere, e.g. a transposition); both blocks get this kind and name
    each other.
``replacement``
    Both sides present with no inversion found: sequence replaced by other sequence.
``small``
    Both sides shorter than ``min_event`` bases (too short to classify).

Conventions
-----------
* Coordinates are 0-based, half-open, forward strand; query = the compared genome,
  target = the reference.
* "(almost) none" means fewer than ``min_event`` bases.
* A pair of sequences "aligns" when their optimal local alignment (the exact pairwise
  engine, so the answer does not depend on heuristics) covers at least
  ``min_coverage`` of the shorter sequence with at least ``min_identity`` identical
  columns. Relocations pair each insertion with the first deletion (in reference order)
  it aligns to that is not yet paired.
* SNPs are ``X`` columns of the matching regions; indels are runs of ``I`` or ``D``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpualign_plugin.model import SyntenicAlignment
from gpualign_plugin.pairwise.api import align_pair
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes

DIFFERENCE_KINDS = ("insertion", "deletion", "inversion", "relocation", "replacement", "small")
"""Kinds of classified difference blocks, in report order."""


@dataclass(frozen=True)
class Difference:
    """One classified difference block.

    Attributes
    ----------
    query_id, target_id : str
        Records of the syntenic alignment it comes from.
    kind : str
        One of :data:`DIFFERENCE_KINDS`.
    query_start, query_end, target_start, target_end : int
        The block on the query and on the reference (0-based, half-open).
    identity : float
        For an inversion or relocation, identity of the local alignment that proved it
        (0 otherwise).
    partner : int
        For a relocation, the index (in the comparison's list) of the block it was
        paired with; -1 otherwise.
    """

    query_id: str
    target_id: str
    kind: str
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    identity: float = 0.0
    partner: int = -1

    @property
    def query_span(self) -> int:
        """Query bases in the block."""
        return self.query_end - self.query_start

    @property
    def target_span(self) -> int:
        """Reference bases in the block."""
        return self.target_end - self.target_start


@dataclass
class GenomeComparison:
    """Totals of a genome comparison (bases unless noted).

    Attributes
    ----------
    query_records, target_records : int
        Records in each genome.
    query_bases, target_bases : int
        Residues in each genome.
    aligned_query_records, aligned_target_records : int
        Records with at least one matching region.
    aligned_query_bases, aligned_target_bases : int
        Residues inside matching regions.
    matching_regions : int
        Number of matching regions.
    columns, identical_columns : int
        Alignment columns of the matching regions, and those with identical residues.
    snps : int
        Mismatch columns (``X``).
    indels, indel_bases : int
        Gap runs (``I`` or ``D``) inside matching regions, and their columns.
    differences : list of Difference
        Every difference block, classified, in alignment order.
    """

    query_records: int = 0
    target_records: int = 0
    query_bases: int = 0
    target_bases: int = 0
    aligned_query_records: int = 0
    aligned_target_records: int = 0
    aligned_query_bases: int = 0
    aligned_target_bases: int = 0
    matching_regions: int = 0
    columns: int = 0
    identical_columns: int = 0
    snps: int = 0
    indels: int = 0
    indel_bases: int = 0
    differences: list = field(default_factory=list)

    @property
    def identity(self) -> float:
        """Identical columns / columns of the matching regions, in percent."""
        return 100.0 * self.identical_columns / self.columns if self.columns else 0.0

    def count(self, kind: str) -> tuple[int, int, int]:
        """``(blocks, query bases, reference bases)`` of the differences of ``kind``."""
        blocks = [d for d in self.differences if d.kind == kind]
        return (len(blocks), sum(d.query_span for d in blocks), sum(d.target_span for d in blocks))


def _local_identity(query_codes, target_codes, scheme: ScoringScheme) -> tuple[float, float]:
    """``(coverage of the shorter sequence, identity)`` of the optimal local alignment."""
    result = align_pair(query_codes, target_codes, scheme, "local")
    if result.score <= 0:
        return 0.0, 0.0
    columns = result.cigar.columns()
    identical = sum(n for n, op in result.cigar.runs if op == "=")
    covered = min(result.query_end - result.query_start, result.target_end - result.target_start)
    return covered / min(len(query_codes), len(target_codes)), identical / columns


def compare_genomes(alignments, queries: dict, targets: dict, scheme: ScoringScheme,
                    min_event: int = 50, min_identity: float = 0.8,
                    min_coverage: float = 0.5) -> GenomeComparison:
    """Summarise syntenic alignments of a query genome against a reference genome.

    Parameters
    ----------
    alignments : iterable of SyntenicAlignment
        One per compared record pair (ids must be keys of ``queries`` / ``targets``).
    queries, targets : dict of str to Sequence
        Every record of the query genome and of the reference (records without an
        alignment count as unaligned).
    scheme : ScoringScheme
        DNA scoring used for the local alignments that test inversions and relocations.
    min_event : int
        Blocks with fewer bases than this on a side count as empty on that side.
    min_identity, min_coverage : float
        What an inversion or relocation test must reach (fractions, see module notes).

    Returns
    -------
    GenomeComparison
    """
    comparison = GenomeComparison(
        query_records=len(queries), target_records=len(targets),
        query_bases=sum(len(s.codes) for s in queries.values()),
        target_bases=sum(len(s.codes) for s in targets.values()))
    aligned_queries, aligned_targets = set(), set()
    for alignment in alignments:
        _add_alignment(comparison, alignment, queries, targets, scheme, min_event, min_identity,
                       min_coverage, aligned_queries, aligned_targets)
    comparison.aligned_query_records = len(aligned_queries)
    comparison.aligned_target_records = len(aligned_targets)
    _pair_relocations(comparison, queries, targets, scheme, min_identity, min_coverage)
    return comparison


def _add_alignment(comparison: GenomeComparison, alignment: SyntenicAlignment, queries, targets,
                   scheme, min_event, min_identity, min_coverage, aligned_queries,
                   aligned_targets) -> None:
    query = queries[alignment.query_id].codes
    target = targets[alignment.target_id].codes
    for block in alignment.blocks:
        if block.kind == "match":
            comparison.matching_regions += 1
            aligned_queries.add(alignment.query_id)
            aligned_targets.add(alignment.target_id)
            comparison.aligned_query_bases += block.query_span
            comparison.aligned_target_bases += block.target_span
            for length, op in block.cigar.runs:
                comparison.columns += length
                if op == "=":
                    comparison.identical_columns += length
                elif op == "X":
                    comparison.snps += length
                else:
                    comparison.indels += 1
                    comparison.indel_bases += length
            continue
        has_query = block.query_span >= min_event
        has_target = block.target_span >= min_event
        identity = 0.0
        if has_query and has_target:
            coverage, identity = _local_identity(
                query[block.query_start:block.query_end],
                reverse_complement_codes(target[block.target_start:block.target_end]), scheme)
            kind = "inversion" if coverage >= min_coverage and identity >= min_identity \
                else "replacement"
            if kind == "replacement":
                identity = 0.0
        elif has_query:
            kind = "insertion"
        elif has_target:
            kind = "deletion"
        else:
            kind = "small"
        comparison.differences.append(Difference(
            alignment.query_id, alignment.target_id, kind, block.query_start, block.query_end,
            block.target_start, block.target_end, identity))


def _pair_relocations(comparison: GenomeComparison, queries, targets, scheme, min_identity,
                      min_coverage) -> None:
    differences = comparison.differences
    deletions = sorted((i for i, d in enumerate(differences) if d.kind == "deletion"),
                       key=lambda i: (differences[i].target_id, differences[i].target_start))
    paired: set[int] = set()
    for index, insertion in enumerate(differences):
        if insertion.kind != "insertion":
            continue
        inserted = queries[insertion.query_id].codes[insertion.query_start:insertion.query_end]
        for other in deletions:
            if other in paired:
                continue
            deletion = differences[other]
            deleted = targets[deletion.target_id].codes[deletion.target_start:deletion.target_end]
            coverage, identity = _local_identity(inserted, deleted, scheme)
            if coverage >= min_coverage and identity >= min_identity:
                paired.add(other)
                differences[index] = _relocated(insertion, identity, other)
                differences[other] = _relocated(deletion, identity, index)
                break


def _relocated(difference: Difference, identity: float, partner: int) -> Difference:
    return Difference(difference.query_id, difference.target_id, "relocation",
                      difference.query_start, difference.query_end, difference.target_start,
                      difference.target_end, identity, partner)
