"""Result types shared by every engine and writer.

Coordinate conventions (used everywhere in gpualign):

* 0-based, half-open intervals ``[start, end)`` on the **forward strand** of each
  sequence, as in PAF and BED.
* A CIGAR runs along the target in increasing coordinate. On the minus strand
  (``strand == '-'``) the query side of the CIGAR reads the reverse complement of
  ``query[query_start:query_end]``.
* CIGAR operations: ``=`` identical residues, ``X`` different residues, ``I`` a
  query residue against a gap (insertion to the target), ``D`` a target residue
  against a gap (deletion from the target), and in SAM output ``S`` soft clips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes
from gpualign_plugin.statistics import KarlinAltschul, ScoreHistogram

_CIGAR_RE = re.compile(r"(\d+)([MIDNSHP=X])")


@dataclass(frozen=True)
class Cigar:
    """A run-length encoded alignment path.

    Attributes
    ----------
    runs : tuple of (int, str)
        ``(length, op)`` pairs; adjacent runs have different ops.
    """

    runs: tuple = ()

    @classmethod
    def from_string(cls, text: str) -> "Cigar":
        """Parse ``'10=1X2I'``; ``'*'`` or ``''`` is the empty CIGAR."""
        if text in ("", "*"):
            return cls(())
        runs = [(int(n), op) for n, op in _CIGAR_RE.findall(text)]
        if "".join(f"{n}{op}" for n, op in runs) != text:
            raise ValueError(f"not a CIGAR string: {text!r}")
        return cls.from_runs(runs)

    @classmethod
    def from_runs(cls, runs) -> "Cigar":
        """Build from ``(length, op)`` pairs, merging adjacent equal ops and dropping zero lengths."""
        merged: list[tuple[int, str]] = []
        for length, op in runs:
            if length <= 0:
                continue
            if merged and merged[-1][1] == op:
                merged[-1] = (merged[-1][0] + length, op)
            else:
                merged.append((int(length), op))
        return cls(tuple(merged))

    @classmethod
    def from_ops(cls, ops: str) -> "Cigar":
        """Build from one character per column, e.g. ``'===XI=='``."""
        runs = []
        for match in re.finditer(r"(.)\1*", ops):
            runs.append((len(match.group(0)), match.group(1)))
        return cls.from_runs(runs)

    def __str__(self) -> str:
        return "".join([f"{n}{op}" for n, op in self.runs]) if self.runs else "*"

    def __len__(self) -> int:
        return len(self.runs)

    def to_m_form(self) -> "Cigar":
        """The same path with ``=`` and ``X`` merged into ``M`` (SAM's classic form)."""
        return Cigar.from_runs((n, "M" if op in "=X" else op) for n, op in self.runs)

    @cached_property
    def op_lengths(self) -> dict[str, int]:
        """Total length of the runs of each operation; every op of ``MIDNSHP=X`` is a key
        (0 when absent). Computed once: a report line reads several of these totals."""
        totals = dict.fromkeys("MIDNSHP=X", 0)
        for length, op in self.runs:
            totals[op] += length
        return totals

    @cached_property
    def gap_runs(self) -> int:
        """Number of runs of ``I`` or ``D`` (gap openings)."""
        return sum(1 for _, op in self.runs if op in "ID")

    def query_length(self) -> int:
        """Query residues consumed (``=XMIS``)."""
        return self._total("=XMIS")

    def target_length(self) -> int:
        """Target residues consumed (``=XMDN``)."""
        return self._total("=XMDN")

    def columns(self) -> int:
        """Alignment columns (``=XMID``)."""
        return self._total("=XMID")

    def _total(self, ops: str) -> int:
        lengths = self.op_lengths
        return sum(lengths[op] for op in ops)

    def reversed(self) -> "Cigar":
        """The runs in reverse order."""
        return Cigar(tuple(reversed(self.runs)))


@dataclass(frozen=True)
class Alignment:
    """One pairwise alignment.

    Attributes
    ----------
    query_id, target_id : str
        Record ids.
    query_length, target_length : int
        Full record lengths.
    query_start, query_end, target_start, target_end : int
        0-based half-open, forward strand (see module docstring).
    strand : str
        ``'+'`` or ``'-'`` (query reverse-complemented).
    score : int
        Alignment score under the scheme it was computed with.
    cigar : Cigar
        ``=XID`` CIGAR along the target.
    mode : str
        ``'local'``, ``'global'`` or ``'semiglobal'``.
    is_primary : bool
        The best alignment of its query (set by placement, see
        :func:`gpualign_plugin.pairwise.placement.place`).
    mapq : int
        Mapping quality (0-60; never 255).
    is_supplementary : bool
        Another part of the same query placed elsewhere (a chimeric or rearranged
        query: SAM flag 0x800, PAF ``tp:A:P`` as minimap2 writes them); its query interval does not overlap
        the primary's beyond the placement rule's allowance.
    evalue, bit_score : float or None
        Karlin-Altschul E-value and bit score of a local alignment, where the
        caller computed them (``None`` otherwise).
    """

    query_id: str
    target_id: str
    query_length: int
    target_length: int
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    strand: str
    score: int
    cigar: Cigar
    mode: str = "local"
    is_primary: bool = True
    mapq: int = 60
    is_supplementary: bool = False
    evalue: float | None = None
    bit_score: float | None = None
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def matches(self) -> int:
        """Columns with identical residues."""
        return self.cigar.op_lengths["="]

    @property
    def mismatches(self) -> int:
        """Columns with different residues."""
        return self.cigar.op_lengths["X"]

    @property
    def gap_opens(self) -> int:
        """Number of gaps (runs of I or D)."""
        return self.cigar.gap_runs

    @property
    def gap_columns(self) -> int:
        """Columns that are gaps in one sequence."""
        return self.cigar.op_lengths["I"] + self.cigar.op_lengths["D"]

    @property
    def columns(self) -> int:
        """Alignment length in columns (BLAST's ``length``)."""
        return self.cigar.columns()

    @property
    def identity(self) -> float:
        """Identical columns over all columns (BLAST's pident / 100); 0 for an empty alignment."""
        columns = self.columns
        return self.matches / columns if columns else 0.0

    @property
    def edit_distance(self) -> int:
        """SAM ``NM``: mismatches plus gap columns."""
        return self.mismatches + self.gap_columns

    def aligned_query_codes(self, query_codes: np.ndarray) -> np.ndarray:
        """The query codes the CIGAR reads: the slice, reverse-complemented on the minus strand."""
        piece = np.asarray(query_codes)[self.query_start:self.query_end]
        return reverse_complement_codes(piece) if self.strand == "-" else piece

    def recompute_score(self, query_codes: np.ndarray, target_codes: np.ndarray,
                        scheme: ScoringScheme) -> int:
        """Score the alignment again from its CIGAR and the sequences.

        Also checks that every ``=`` column holds identical codes and every ``X``
        column different ones, and that the CIGAR consumes exactly the reported
        intervals; raises ``ValueError`` otherwise. Every test that checks an
        alignment calls this.
        """
        query = self.aligned_query_codes(query_codes)
        target = np.asarray(target_codes)[self.target_start:self.target_end]
        if self.cigar.query_length() != len(query) or self.cigar.target_length() != len(target):
            raise ValueError(f"CIGAR {self.cigar} does not span query {len(query)} / target {len(target)}")
        return score_cigar(self.cigar, query, target, scheme)


def column_ops(cigar: Cigar) -> np.ndarray:
    """The operation of every column of ``cigar`` (``uint8`` letter codes: ``=``, ``X``, ``I``, ``D``)."""
    ops = np.frombuffer("".join(op for _, op in cigar.runs).encode(), dtype=np.uint8)
    return np.repeat(ops, [length for length, _ in cigar.runs])


def cigar_columns(cigar: Cigar, start: int, end: int) -> tuple[Cigar, int, int]:
    """Columns ``[start, end)`` of ``cigar`` as a CIGAR (``cigar`` itself when that is all of
    it), with the query and target residues that the columns before ``start`` consume."""
    ops = column_ops(cigar)
    if (start, end) == (0, len(ops)):
        return cigar, 0, 0
    before = ops[:start]
    return (Cigar.from_ops(ops[start:end].tobytes().decode()), int(np.count_nonzero(before != ord("D"))),
            int(np.count_nonzero(before != ord("I"))))


def column_scores(cigar: Cigar, query: np.ndarray, target: np.ndarray,
                  scheme: ScoringScheme) -> np.ndarray:
    """Score of every column of an ``=XID`` path (``int64``, one entry per column).

    ``query`` and ``target`` are the aligned residues (already sliced and oriented).
    An aligned column scores ``matrix[q, t]``; the first column of a gap run
    ``-(open + extend)``, the others ``-extend``; so the sum over any stretch of
    columns that cuts no gap run is that stretch's alignment score.
    """
    return path_scores(column_ops(cigar), query, target, scheme)


def path_scores(ops: np.ndarray, query: np.ndarray, target: np.ndarray, scheme: ScoringScheme) -> np.ndarray:
    """:func:`column_scores` of a path given as one operation per column (letter codes, as
    :func:`column_ops` gives them)."""
    consumes_q, consumes_t = ops != ord("D"), ops != ord("I")
    aligned = consumes_q & consumes_t
    scores = np.full(len(ops), -scheme.gap_extend, dtype=np.int64)
    # The residue a column reads: the count of residues its sequence consumed up to it, less one.
    scores[aligned] = scheme.matrix[query[np.cumsum(consumes_q)[aligned] - 1],
                                    target[np.cumsum(consumes_t)[aligned] - 1]]
    gap_opens = ~aligned & np.concatenate(([True], ops[1:] != ops[:-1])) if len(ops) else aligned
    scores[gap_opens] -= scheme.gap_open
    return scores


def score_cigar(cigar: Cigar, query: np.ndarray, target: np.ndarray, scheme: ScoringScheme) -> int:
    """Score of ``cigar`` aligning ``query`` to ``target`` (codes; both already sliced and oriented).

    ``=``/``X`` columns are checked against the residues; each ``I``/``D`` run is
    one gap costing ``open + length * extend``. Soft clips are skipped on the query.
    """
    score = 0
    qi = ti = 0
    for length, op in cigar.runs:
        if op in "=XM":
            a = query[qi:qi + length]
            b = target[ti:ti + length]
            equal = a == b
            if op == "=" and not equal.all():
                raise ValueError(f"'=' run at query {qi} holds different residues")
            if op == "X" and equal.any():
                raise ValueError(f"'X' run at query {qi} holds identical residues")
            score += int(scheme.matrix[a, b].sum())
            qi += length
            ti += length
        elif op == "I":
            score -= scheme.gap_cost(length)
            qi += length
        elif op == "D":
            score -= scheme.gap_cost(length)
            ti += length
        elif op == "S":
            qi += length
        else:
            raise ValueError(f"unexpected CIGAR op {op!r}")
    return score


@dataclass(frozen=True)
class MultipleAlignment:
    """A global alignment of several sequences (rows), as written to MAF, aligned FASTA and Clustal.

    Every tuple attribute holds one entry per row, in row order.

    Attributes
    ----------
    ids : tuple of str
        Record ids.
    sources : tuple of str
        MAF ``src`` names (``genome.record`` when a genome name was given, else the record id).
    rows : tuple of str
        Gapped text, one character per column, ``'-'`` for a gap, case kept. A row on the
        minus strand reads the reverse complement of ``source[start:end]``.
    score : int
        Sum-of-pairs score under the scheme and gap cost it was computed with.
    starts, ends : tuple of int
        0-based half-open interval of each row on the **forward** strand of its source
        (the convention of the module docstring; MAF's own minus-strand start is
        :meth:`maf_start`).
    strands : tuple of str
        ``'+'`` or ``'-'``.
    source_lengths : tuple of int
        Full length of each source sequence (MAF ``srcSize``).
    name : str
        Optional name of the alignment (the triplet's name in ``gpualign align3``).
    """

    ids: tuple
    sources: tuple
    rows: tuple
    score: int
    starts: tuple
    ends: tuple
    strands: tuple
    source_lengths: tuple
    name: str = ""

    @property
    def columns(self) -> int:
        """Number of alignment columns."""
        return len(self.rows[0]) if self.rows else 0

    def maf_start(self, row: int) -> int:
        """MAF start of ``row``: 0-based, counted on the reverse complement for the minus strand.

        For ``'-'`` this is ``source_length - end``: the row's residues are
        ``reverse_complement(source)[maf_start : maf_start + size]``.
        """
        if self.strands[row] == "-":
            return self.source_lengths[row] - self.ends[row]
        return self.starts[row]


@dataclass(frozen=True)
class SyntenicBlock:
    """One region of a syntenic alignment: a matching region or a difference block.

    Attributes
    ----------
    kind : str
        ``'match'`` (the residues are aligned, path in :attr:`cigar`) or
        ``'difference'`` (an unaligned region on both sequences; either side may be empty).
    query_start, query_end, target_start, target_end : int
        0-based half-open intervals on the forward strand.
    score : int
        A matching region: the score of its CIGAR (:func:`score_cigar`); a
        difference block: minus the block penalty.
    cigar : Cigar
        ``=XID`` CIGAR of a matching region along the target; empty for a difference block.
        In an alignment of the minus strand it reads the reverse complement of
        ``query[query_start:query_end]``, as :class:`Alignment`'s CIGAR does.
    """

    kind: str
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    score: int
    cigar: Cigar = Cigar(())

    @property
    def query_span(self) -> int:
        """Residues of the query the region covers."""
        return self.query_end - self.query_start

    @property
    def target_span(self) -> int:
        """Residues of the target the region covers."""
        return self.target_end - self.target_start

    @property
    def matches(self) -> int:
        """Columns with identical residues (0 for a difference block)."""
        return self.cigar.op_lengths["="]

    @property
    def identity(self) -> float:
        """Identical columns over all columns of a matching region; 0 for a difference block."""
        columns = self.cigar.columns()
        return self.matches / columns if columns else 0.0

    def mirrored(self, query_length: int) -> "SyntenicBlock":
        """The block with its query interval counted from the other end of a query of
        ``query_length``: ``[query_length - end, query_length - start)``.

        This maps an interval on the reverse complement of the query to the forward strand
        and back (the mapping is its own inverse); the target interval and CIGAR are kept.
        """
        return replace(self, query_start=query_length - self.query_end,
                       query_end=query_length - self.query_start)


@dataclass(frozen=True)
class SyntenicAlignment:
    """A generalized global (syntenic) alignment: matching regions and difference blocks in order.

    The blocks tile both sequences along the alignment: on the ``'+'`` strand each starts
    where the previous one ended, the first at ``(0, 0)``, the last ends at
    ``(query_length, target_length)``. On the ``'-'`` strand the reverse complement of the
    query is aligned; the blocks still give forward-strand query coordinates (as
    :class:`Alignment` does), so along the target they run down the query: the first block
    ends at ``query_length``, the last starts at 0.

    Attributes
    ----------
    query_id, target_id : str
        Record ids.
    query_length, target_length : int
        Full record lengths.
    score : int
        Total score: matching region scores minus ``block_penalty`` per difference block.
    block_penalty : int
        The cost of one difference block this alignment was computed with.
    blocks : tuple of SyntenicBlock
        The regions in alignment order (increasing target coordinates).
    strand : str
        ``'+'``, or ``'-'``: the query's reverse complement was aligned to the target.
    """

    query_id: str
    target_id: str
    query_length: int
    target_length: int
    score: int
    block_penalty: int
    blocks: tuple = ()
    strand: str = "+"

    @property
    def matching_regions(self) -> tuple:
        """The blocks of kind ``'match'``."""
        return tuple(b for b in self.blocks if b.kind == "match")

    @property
    def difference_blocks(self) -> tuple:
        """The blocks of kind ``'difference'``."""
        return tuple(b for b in self.blocks if b.kind == "difference")

    def recompute_score(self, query_codes: np.ndarray, target_codes: np.ndarray,
                        scheme: ScoringScheme) -> int:
        """Score the alignment again from its blocks, CIGARs and the sequences.

        ``query_codes`` are the query's forward-strand codes, also for a ``'-'`` alignment
        (whose CIGARs are then read against the reverse complement). Checks that the blocks
        tile both sequences and that every matching region's CIGAR spans its intervals
        (``ValueError`` otherwise); returns the sum of the matching regions' CIGAR scores
        minus ``block_penalty`` per difference block.
        """
        query_codes = np.asarray(query_codes)
        blocks = self.blocks
        if self.strand == "-":
            query_codes = reverse_complement_codes(query_codes)
            blocks = [block.mirrored(self.query_length) for block in blocks]
        query_at = target_at = 0
        total = 0
        for block in blocks:
            if (block.query_start, block.target_start) != (query_at, target_at):
                raise ValueError(f"block at {block.query_start}/{block.target_start} does not start "
                                 f"where the previous one ended ({query_at}/{target_at})")
            query_at, target_at = block.query_end, block.target_end
            if block.kind == "difference":
                total -= self.block_penalty
                continue
            query = np.asarray(query_codes)[block.query_start:block.query_end]
            target = np.asarray(target_codes)[block.target_start:block.target_end]
            if block.cigar.query_length() != len(query) or block.cigar.target_length() != len(target):
                raise ValueError(f"CIGAR {block.cigar} does not span its region")
            total += score_cigar(block.cigar, query, target, scheme)
        if (query_at, target_at) != (self.query_length, self.target_length):
            raise ValueError("the blocks do not cover both sequences")
        return total


@dataclass(frozen=True)
class PairScore:
    """Score-only result.

    Attributes
    ----------
    score : int
        The optimal score (0 for local with no positive cell).
    query_end, target_end : int
        The end cell ``(i, j)`` chosen by the end-cell rule: half-open ends of the
        alignment on the query and target as given (0, 0 when local finds nothing).
    """

    score: int
    query_end: int
    target_end: int


@dataclass(frozen=True)
class PairAlignment:
    """Full result, coordinates on the sequences as given (already oriented).

    Attributes
    ----------
    score : int
        The optimal score.
    query_start, query_end, target_start, target_end : int
        0-based half-open intervals the CIGAR spans.
    cigar : Cigar
        ``=XID`` operations along the target.

    A local alignment with no positive cell has score 0, all coordinates 0 and
    an empty CIGAR.
    """

    score: int
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    cigar: Cigar


NO_PAIR_ALIGNMENT = PairAlignment(0, 0, 0, 0, 0, Cigar(()))
"""What a local alignment with no positive cell returns: score 0, empty CIGAR."""

UNKNOWN_BASE = "N"
"""The base that SAM's ``NM`` and ``MD`` count as a difference even against itself ("edit distance
... including ambiguous bases"; samtools calmd's rule), although the CIGAR (``=``), BLAST and
ssearch36 count an N aligned to an N as identical."""


def unknown_matches(cigar: Cigar, target_text: str) -> int:
    """The ``=`` columns of an ``=XID`` ``cigar`` whose target letter (in ``target_text``, the aligned
    target residues) is :data:`UNKNOWN_BASE`: an N matched by an N, which SAM's ``NM``, ``MD``
    and ``de`` count as a difference (PAF counts every ambiguous letter: :func:`ambiguous_columns`)."""
    count = position = 0
    for length, op in cigar.runs:
        if op == "=":
            count += target_text[position:position + length].upper().count(UNKNOWN_BASE)
        if op in "=XD":
            position += length
    return count


_AMBIGUOUS_BASE = re.compile("[^ACGTacgt]")


def _columns_of(positions: np.ndarray, lengths: np.ndarray, consumes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(column, run)`` of each residue position (0-based in the aligned text of the sequence
    whose runs are marked ``consumes``) along runs of ``lengths``."""
    residues = np.where(consumes, lengths, 0)
    residues_before = np.cumsum(residues) - residues
    # The last run starting at or before a position: runs of the other sequence have no width here.
    runs = np.searchsorted(residues_before, positions, side="right") - 1
    columns_before = np.cumsum(lengths) - lengths
    return columns_before[runs] + positions - residues_before[runs], runs


def ambiguous_columns(cigar: Cigar, query_text: str, target_text: str) -> tuple[int, int]:
    """minimap2's ambiguous bases of a DNA alignment (its ``nn:i``): ``(matched, columns)``.

    An ambiguous base is any letter but A, C, G, T (either case): N and the IUPAC codes.
    ``matched`` counts the ``=`` columns of an ambiguous letter (minimap2 leaves them out of
    ``nmatch`` and counts them in ``NM``); ``columns`` every column holding one: ``=`` or ``X``
    with one on either side, ``I`` with one on the query, ``D`` with one on the target (minimap2
    leaves them out of the block length). ``query_text`` and ``target_text`` are the aligned
    residues in the ``cigar``'s order; on the minus strand the query's slice reversed will do,
    as a complement is ambiguous exactly where its base is.
    """
    query_ambiguous = np.array([m.start() for m in _AMBIGUOUS_BASE.finditer(query_text)], dtype=np.int64)
    target_ambiguous = np.array([m.start() for m in _AMBIGUOUS_BASE.finditer(target_text)], dtype=np.int64)
    if not len(query_ambiguous) and not len(target_ambiguous):
        return 0, 0
    lengths = np.array([length for length, _ in cigar.runs], dtype=np.int64)
    ops = np.array([op for _, op in cigar.runs])
    query_columns, _ = _columns_of(query_ambiguous, lengths, ops != "D")
    target_columns, target_runs = _columns_of(target_ambiguous, lengths, ops != "I")
    matched = int(np.count_nonzero(ops[target_runs] == "="))
    return matched, len(np.union1d(query_columns, target_columns))


RUN_OPS = "=XID"
"""The operation of each 2-bit code of :attr:`AlignmentColumns.runs` (the order of :data:`gpualign_plugin.gotoh.OP_LETTERS`)."""


@dataclass
class AlignmentColumns:
    """Many :class:`PairAlignment` results as arrays, one row per pair (what the batch engines return).

    Attributes
    ----------
    score, query_start, query_end, target_start, target_end : numpy.ndarray
        ``int64``, one entry per pair, as in :class:`PairAlignment` (coordinates on the
        sequences as given).
    runs : numpy.ndarray
        ``uint32`` CIGAR runs of every pair back to back, each in forward order
        (along the target), coded ``length << 2 | op`` with ``op`` an index into
        :data:`RUN_OPS`.
    run_offsets : numpy.ndarray
        ``int64``, ``len(self) + 1`` boundaries: pair ``k``'s runs are
        ``runs[run_offsets[k]:run_offsets[k + 1]]``.

    A local pair without an alignment has score 0, coordinates 0 and no runs, as
    :data:`NO_PAIR_ALIGNMENT`.
    """

    score: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    runs: np.ndarray
    run_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    def run_counts(self) -> np.ndarray:
        """``int64`` number of CIGAR runs of each pair."""
        return np.diff(self.run_offsets)

    def pairs(self) -> list[PairAlignment]:
        """One :class:`PairAlignment` per pair, in order (equal to what the engines give pair by pair)."""
        codes = self.runs.tolist()
        # One (length, op) tuple per distinct code, shared by every run that has it.
        table = {v: (v >> 2, RUN_OPS[v & 3]) for v in set(codes)}
        runs = list(map(table.__getitem__, codes))
        bounds = self.run_offsets.tolist()
        return [NO_PAIR_ALIGNMENT if first == last and score == 0 else
                PairAlignment(score, qs, qe, ts, te, Cigar(tuple(runs[first:last])))
                for score, qs, qe, ts, te, first, last in zip(
                    self.score.tolist(), self.query_start.tolist(), self.query_end.tolist(),
                    self.target_start.tolist(), self.target_end.tolist(), bounds[:-1], bounds[1:])]


@dataclass(frozen=True)
class Hit:
    """One reported database hit.

    Attributes
    ----------
    query_index : int
        0-based index of the query in its file.
    target_index : int
        0-based index of the target in the **whole** database file (also in a shard).
    alignment : Alignment
        The pairwise engine's local alignment (coordinates 0-based half-open,
        forward strand; ``strand`` ``'-'`` for the reverse-complemented query).
    bit_score, evalue : float
        Karlin-Altschul statistics (NaN until :func:`finish` sets them).
    """

    query_index: int
    target_index: int
    alignment: Alignment
    bit_score: float = float("nan")
    evalue: float = float("nan")

    @property
    def rank_key(self) -> tuple:
        """Sort key of the ranking rule: score descending, target index, ``+`` before ``-``."""
        return (-self.alignment.score, self.target_index, self.alignment.strand == "-")


@dataclass
class SearchResult:
    """Hits of a search (or of one shard of it) before or after statistics.

    Attributes
    ----------
    queries : list of (str, int)
        Query ids and lengths in file order.
    hits : list of Hit
        Grouped by query (file order), each query's hits ranked (at most ``top``).
    top : int
        Hits kept per query.
    database_residues : int
        Residues of the whole database (``N`` of the E-value).
    database_sequences : int
        Records of the whole database.
    histogram : ScoreHistogram or None
        Pair-score statistics when the scheme has no published parameters.
    parameters : KarlinAltschul or None
        Set by :func:`finish`.
    targets : dict of int to Sequence
        The records of the hit targets by database index, when the search (not a
        ``.hits`` file) produced the result; the SAM writer needs their residues.
    """

    queries: list
    hits: list
    top: int
    database_residues: int
    database_sequences: int
    histogram: ScoreHistogram | None = None
    parameters: KarlinAltschul | None = field(default=None)
    targets: dict = field(default_factory=dict)
