"""SAM/BAM output of pairwise alignments through pysam: sorted, indexed, written atomically.

Record layout (one record per :class:`~gpualign_plugin.model.Alignment`):

* FLAG: 16 on the minus strand, 256 for a secondary alignment, 2048 for a
  supplementary one (another piece of a query placed elsewhere, see
  :func:`gpualign_plugin.pairwise.placement.place_local`), 4 for an unmapped query;
  no other bits.
* POS, MAPQ from the alignment; RNEXT ``*``, PNEXT 0, TLEN 0.
* CIGAR in ``=``/``X`` form with clips for the unaligned ends of the query, so that
  the query length is recoverable from every record: soft clips (``S``) on primary and
  secondary records, hard clips (``H``) on supplementary ones (as minimap2 writes
  them). Along the target, like SEQ: on the minus strand the CIGAR reads the reverse
  complement of the query, and its leading clip is the query's 3' end.
* SEQ: the whole query (supplementary: the aligned part), reverse-complemented on the
  minus strand, in **upper case**. The SAM spec says no assumption can be made on the
  letter case of SEQ and BAM's 4-bit encoding cannot keep it, so soft-masking is not
  carried into SAM/BAM. SEQ is ``*`` on secondary records (as minimap2 does:
  whole-genome queries are not repeated) and on every record of a protein alignment,
  because BAM's 4-bit nucleotide encoding cannot hold amino acids. QUAL is ``*``.
* Tags: ``AS:i`` score, ``NM:i`` mismatches plus gap columns, ``MD:Z`` (from the
  target's residues, upper case) and ``de:f``, minimap2's gap-compressed
  divergence ``(mismatches + gap opens) / (matches + mismatches + gap opens)``;
  one minus ``de`` is the gap-compressed identity. ``ZE:f`` (E-value) and ``ZB:f``
  (bit score) where the alignment has them (local placement; ``f`` is a 32-bit
  float, so E-values below about 1e-45 read 0, as BLAST prints 0.0 below 1e-180).
  On the primary and supplementary records of a query with several pieces, ``SA:Z``
  lists the others (``rname,pos,strand,CIGAR,mapQ,NM;`` with a soft-clipped ``M``
  CIGAR, the SAM spec's form).
* Unmapped queries given to :func:`write_alignments` are written last, flag 4, RNAME
  ``*``, POS 0, MAPQ 0, CIGAR ``*``, SEQ the query (``*`` for protein), no tags, so that
  ``samtools flagstat`` counts them.
* CIGARs of more than 65,535 operations are stored the BAM way by htslib itself
  (CIGAR ``<query length>S<target span>N``, the real CIGAR in ``CG:B,I``);
  pysam and samtools restore the real CIGAR on reading. SAM text keeps it inline.

Header: ``@HD VN:1.6 SO:coordinate`` (``SO:unsorted`` when not sorted), one
``@SQ SN LN`` per target record in file order, and ``@PG ID:gpualign PN:gpualign
VN:<version> CL:<command line>``.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import re
import sys
from typing import Iterable, Iterator, Union

import pysam

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import atomic_path, is_stream
from gpualign_plugin.io.names import Names
from gpualign_plugin.model import UNKNOWN_BASE, Alignment, Cigar, unknown_matches
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_text

Target = Union[Sequence, tuple]
"""A target record: a :class:`Sequence`, or ``(name, length)`` when only the header needs it."""

QNAME_MAX_LENGTH = 254
"""The longest query name SAM's QNAME (``[!-?A-~]{1,254}``) and BAM's ``l_read_name`` hold."""


_QNAME_CHARACTERS = re.compile(r"[!-?A-~]*")
"""The characters of SAM's QNAME grammar (``[!-?A-~]{1,254}``): printable ASCII without ``@``."""


_NOT_QNAME = re.compile(r"[^!-?A-~\n]")
"""A character outside SAM's QNAME grammar, in names joined by newlines."""


def _joined_apart(joined: str, names: list) -> bool:
    """Whether ``joined`` (``names`` joined by newlines) has one line per name: no name holds a
    newline, so a check of the lines is a check of the names."""
    return joined.count("\n") == max(len(names) - 1, 0)


def check_query_names(names: Iterable[str], path: str | None = None) -> None:
    """Raise :class:`InputError` for the first name longer than :data:`QNAME_MAX_LENGTH`,
    named ``*`` (SAM's QNAME for "no name", which samtools and IGV would read so), or holding
    a character SAM's QNAME excludes (``@``: a record line starting with it reads as a header
    line, and samtools refuses the file; anything outside printable ASCII).

    ``path`` (the query file) is named in the message when given. The commands call it
    before any work when a SAM or BAM output is asked for.
    """
    if isinstance(names, Names):
        lengths = names.lengths()
        if (names.only_bytes_outside(_NOT_QNAME) and lengths.max(initial=0) <= QNAME_MAX_LENGTH
                and not ((lengths == 1) & (names.first_bytes() == ord("*"))).any()):
            return  # every name passes the checks below, seen in the bytes of all of them
    names = names if isinstance(names, list) else list(names)
    joined = "\n".join(names)
    if (_joined_apart(joined, names) and _NOT_QNAME.search(joined) is None and "\n*\n" not in f"\n{joined}\n"
            and max(map(len, names), default=0) <= QNAME_MAX_LENGTH):
        return  # every name passes the checks below, seen in one pass over all of them
    for name in names:
        if name == "*":
            raise InputError("a query named '*': SAM/BAM read that QNAME as 'no name' (rename the "
                             "record, or leave out the SAM/BAM output)", path=path, record=name)
        if not _QNAME_CHARACTERS.fullmatch(name):
            raise InputError("query name is not a SAM QNAME (printable ASCII without '@'; samtools "
                             "reads a line starting with '@' as a header line): rename the record, "
                             "or leave out the SAM/BAM output", path=path, record=name)
        if len(name) > QNAME_MAX_LENGTH:  # ASCII, as checked above: characters are bytes
            raise InputError(f"query name of {len(name)} characters; SAM/BAM query names (QNAME) "
                             f"hold at most {QNAME_MAX_LENGTH} (shorten it, or leave out the SAM/BAM "
                             "output)", path=path, record=name)


_REFERENCE_NAME = re.compile(r"[0-9A-Za-z!#$%&+./:;?@^_|~-][0-9A-Za-z!#$%&*+./:;=?@^_|~-]*")
"""SAM's grammar of a reference name (``@SQ SN``, RNAME): printable ASCII without commas, quotes,
backslashes, brackets, parentheses or braces, not starting with ``*`` or ``=``."""
_NOT_REFERENCE_CHARACTER = re.compile(r"[^0-9A-Za-z!#$%&*+./:;=?@^_|~\n-]")
"""A character outside :data:`_REFERENCE_NAME`, in names joined by newlines."""


def check_target_names(names: Iterable[str], path: str | None = None) -> None:
    """Raise :class:`InputError` for the first name that is not a SAM reference name
    (:data:`_REFERENCE_NAME`): written as ``@SQ SN`` and RNAME it would make invalid SAM/BAM,
    and a comma would split the ``SA:Z`` entries naming it in the wrong places.

    ``path`` (the target file) is named in the message when given. The commands call it
    before any work when a SAM or BAM output is asked for.
    """
    if isinstance(names, Names):
        first = names.first_bytes()
        if (names.only_bytes_outside(_NOT_REFERENCE_CHARACTER) and (names.lengths() > 0).all()
                and not ((first == ord("*")) | (first == ord("="))).any()):
            return  # every name is a reference name, seen in the bytes of all of them
    names = names if isinstance(names, list) else list(names)
    joined = "\n".join(names)
    lines = f"\n{joined}\n"
    if (_joined_apart(joined, names) and _NOT_REFERENCE_CHARACTER.search(joined) is None
            and "\n\n" not in lines and "\n*" not in lines and "\n=" not in lines):
        return  # every name is a reference name, seen in one pass over all of them
    for name in names:
        if not _REFERENCE_NAME.fullmatch(name):
            raise InputError("target name is not a SAM reference name (printable ASCII without "
                             "commas, quotes, backslashes or brackets of any kind, not starting "
                             "with '*' or '='); rename the record, or leave out the SAM/BAM output",
                             path=path, record=name)


BAI_MAX_LENGTH = 1 << 29
"""Longest reference a ``.bai`` index can address (2^29 bp, about 537 Mbp); longer ones need ``.csi``."""

FLAG_UNMAPPED = 4
FLAG_REVERSE = 16
FLAG_SECONDARY = 256
FLAG_SUPPLEMENTARY = 2048

# The SAM specification's grammar of the MD:Z value.
_MD_GRAMMAR = re.compile(r"[0-9]+(([A-Z]|\^[A-Z]+)[0-9]+)*")
_CIGAR_CODES = {"M": 0, "I": 1, "D": 2, "N": 3, "S": 4, "H": 5, "=": 7, "X": 8}


def soft_clipped_cigar(alignment: Alignment, clip: str = "S") -> Cigar:
    """The alignment's CIGAR with ``clip`` runs (``S`` or ``H``) for the query residues outside it.

    On the minus strand the record's SEQ is the reverse complement of the query,
    so the leading clip is ``query_length - query_end`` and the trailing one
    ``query_start``; on the plus strand they are ``query_start`` and
    ``query_length - query_end``.
    """
    head = alignment.query_start
    tail = alignment.query_length - alignment.query_end
    if alignment.strand == "-":
        head, tail = tail, head
    return Cigar.from_runs([(head, clip), *alignment.cigar.runs, (tail, clip)])


def sa_entry(alignment: Alignment) -> str:
    """One ``SA:Z`` entry: ``rname,pos,strand,CIGAR,mapQ,NM;`` (1-based pos, soft-clipped M CIGAR)."""
    cigar = soft_clipped_cigar(alignment).to_m_form()
    return (f"{alignment.target_id},{alignment.target_start + 1},{alignment.strand},{cigar},"
            f"{alignment.mapq},{alignment.edit_distance};")


def supplementary_tags(alignments: list[Alignment]) -> list[str | None]:
    """The ``SA:Z`` value of each alignment (``None`` where it gets none).

    The primary and supplementary records of one query (``is_primary``) each list
    all the others of that query, in input order; secondary records and queries
    with one piece get none.
    """
    pieces: dict[str, list[int]] = {}
    for k, alignment in enumerate(alignments):
        if alignment.is_primary:
            pieces.setdefault(alignment.query_id, []).append(k)
    tags: list[str | None] = [None] * len(alignments)
    for members in pieces.values():
        if len(members) > 1:
            for k in members:
                tags[k] = "".join(sa_entry(alignments[other]) for other in members if other != k)
    return tags


def md_tag(cigar: Cigar, target_text: str, dna: bool = True) -> str | None:
    """SAM ``MD:Z`` string of an ``=XID`` CIGAR over the aligned target residues.

    The SAM grammar of MD (``[0-9]+(([A-Z]|\\^[A-Z]+)[0-9]+)*``) has room for letters only:
    when a mismatched or deleted target residue is not a letter (protein ``*``), there is
    no MD string and ``None`` is returned (MD is an optional tag; the record goes without).

    Parameters
    ----------
    cigar : Cigar
        ``=``, ``X``, ``I``, ``D`` runs (``S`` runs are ignored).
    target_text : str
        ``target[target_start:target_end]`` as text; written upper case.
    dna : bool
        An N matched by an N (an ``=`` column) is written as a mismatch, as samtools calmd does
        (:data:`~gpualign_plugin.model.UNKNOWN_BASE`).

    Returns
    -------
    str or None
        Matches as counts, each mismatch as the target letter, each deletion as
        ``^`` and the deleted target letters; a count (possibly 0) between any two
        letters or deletions and at both ends, as the spec's grammar requires.
        ``None`` when a mismatched or deleted residue is not a letter ``A``-``Z``.

    Raises
    ------
    ValueError
        For an ``M`` run (matches and mismatches cannot be told apart).
    """
    pieces: list[str] = []
    matched = 0
    position = 0
    for length, op in cigar.runs:
        if op == "=" and dna:
            for letter in target_text[position:position + length].upper():
                if letter == UNKNOWN_BASE:
                    pieces.append(f"{matched}{letter}")
                    matched = 0
                else:
                    matched += 1
            position += length
        elif op == "=":
            matched += length
            position += length
        elif op == "X":
            for letter in target_text[position:position + length].upper():
                pieces.append(f"{matched}{letter}")
                matched = 0
            position += length
        elif op == "D":
            pieces.append(f"{matched}^{target_text[position:position + length].upper()}")
            matched = 0
            position += length
        elif op == "M":
            raise ValueError("MD needs an =/X CIGAR, not M")
    pieces.append(str(matched))
    md = "".join(pieces)
    return md if _MD_GRAMMAR.fullmatch(md) else None


def gap_compressed_divergence(alignment: Alignment, unknown: int = 0) -> float:
    """minimap2's ``de``: (mismatches + gap opens) / (matches + mismatches + gap opens); 0 if empty.
    ``unknown`` of the matches (N against N, :func:`~gpualign_plugin.model.unknown_matches`) count
    as mismatches, as minimap2 counts them."""
    events = alignment.mismatches + unknown + alignment.gap_opens
    total = alignment.matches + alignment.mismatches + alignment.gap_opens
    return events / total if total else 0.0


def _target_entries(targets: Iterable[Target]) -> list[tuple[str, int, Sequence | None]]:
    entries = []
    for target in targets:
        if isinstance(target, Sequence):
            entries.append((target.id, len(target), target))
        else:
            name, length = target
            entries.append((str(name), int(length), None))
    return entries


def index_kind(lengths: Iterable[int]) -> str:
    """``'bai'``, or ``'csi'`` when any reference is longer than :data:`BAI_MAX_LENGTH`."""
    return "csi" if any(length > BAI_MAX_LENGTH for length in lengths) else "bai"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _header_text(header: dict) -> str:
    """Render a header dictionary as SAM text, key field (VN/SN/ID) first, others in order."""
    first = {"HD": "VN", "SQ": "SN", "PG": "ID"}
    lines = []
    for kind in ("HD", "SQ", "PG"):
        entries = header.get(kind, [])
        for fields in [entries] if isinstance(entries, dict) else entries:
            ordered = sorted(fields.items(), key=lambda item: item[0] != first[kind])
            lines.append("\t".join([f"@{kind}"] + [f"{key}:{value}" for key, value in ordered]))
    return "\n".join(lines) + "\n"


def header_text(targets: Iterable[Target], command_line: str, sort: bool = True) -> str:
    """The header as SAM text: ``@HD``, one ``@SQ`` per target in order, and ``@PG`` with the command line.

    What :func:`sam_header` holds and pysam writes, byte for byte (one string built at
    once: a million references take well under a second).
    """
    from gpualign_plugin.version import __version__

    references = "".join([f"@SQ\tSN:{name}\tLN:{length}\n"
                          for name, length, _ in _target_entries(targets)])
    return (f"@HD\tVN:1.6\tSO:{'coordinate' if sort else 'unsorted'}\n{references}"
            f"@PG\tID:gpualign\tPN:gpualign\tVN:{__version__}\tCL:{_one_line(command_line)}\n")


def sam_header(targets: Iterable[Target], command_line: str,
               sort: bool = True) -> pysam.AlignmentHeader:
    """The header: ``@HD``, one ``@SQ`` per target in order, and ``@PG`` with the command line."""
    return pysam.AlignmentHeader.from_text(header_text(targets, command_line, sort))


def _record(alignment: Alignment, header: pysam.AlignmentHeader, reference_id: int,
            target: Sequence | None, query: Sequence | None, with_seq: bool, dna: bool,
            sa: str | None = None) -> pysam.AlignedSegment:
    if target is None:
        raise ValueError(f"target {alignment.target_id!r} was given without its sequence; "
                         "MD needs the residues")
    if alignment.target_length != len(target):
        raise ValueError(f"alignment of {alignment.query_id!r} says target {alignment.target_id!r} "
                         f"has {alignment.target_length} residues, the record has {len(target)}")
    hard = alignment.is_supplementary
    cigar = soft_clipped_cigar(alignment, "H" if hard else "S")
    record = pysam.AlignedSegment(header)
    record.query_name = alignment.query_id
    record.flag = ((FLAG_REVERSE if alignment.strand == "-" else 0)
                   | (0 if alignment.is_primary else FLAG_SECONDARY)
                   | (FLAG_SUPPLEMENTARY if hard else 0))
    record.reference_id = reference_id
    record.reference_start = alignment.target_start
    record.mapping_quality = alignment.mapq
    record.cigartuples = [(_CIGAR_CODES[op], length) for length, op in cigar.runs]
    if with_seq:
        if query is None:
            raise ValueError(f"query {alignment.query_id!r} is missing from queries")
        if len(query) != alignment.query_length:
            raise ValueError(f"alignment says query {alignment.query_id!r} has "
                             f"{alignment.query_length} residues, the record has {len(query)}")
        text = query.text[alignment.query_start:alignment.query_end] if hard else query.text
        text = reverse_complement_text(text) if alignment.strand == "-" else text
        record.query_sequence = text.upper()
    record.next_reference_id = -1
    record.next_reference_start = -1
    record.template_length = 0
    aligned_target = target.text[alignment.target_start:alignment.target_end]
    md = md_tag(alignment.cigar, aligned_target, dna)
    unknown = unknown_matches(alignment.cigar, aligned_target) if dna else 0
    tags = [("AS", int(alignment.score), "i"), ("NM", alignment.edit_distance + unknown, "i")]
    tags += [("MD", md, "Z")] if md is not None else []
    tags += [("de", gap_compressed_divergence(alignment, unknown), "f")]
    if alignment.evalue is not None:
        tags += [("ZE", float(alignment.evalue), "f"), ("ZB", float(alignment.bit_score), "f")]
    if sa is not None:
        tags.append(("SA", sa, "Z"))
    record.set_tags(tags)
    return record


def _unmapped_record(query: Sequence, header: pysam.AlignmentHeader,
                     with_seq: bool) -> pysam.AlignedSegment:
    record = pysam.AlignedSegment(header)
    record.query_name = query.id
    record.flag = FLAG_UNMAPPED
    record.reference_id = -1
    record.reference_start = -1
    record.mapping_quality = 0
    record.next_reference_id = -1
    record.next_reference_start = -1
    record.template_length = 0
    if with_seq:
        record.query_sequence = query.text.upper()
    return record


def unmapped_lines(queries: Iterable[Sequence], with_seq: bool) -> bytes:
    """The SAM lines of the unmapped records (flag 4) that :func:`write_alignments` writes for
    ``queries`` (``with_seq``: the sequence too, as for DNA), for writers that build the other
    lines themselves (``gpualign batch``)."""
    header = pysam.AlignmentHeader.from_dict({"HD": {"VN": "1.6"}})
    return "".join(_unmapped_record(query, header, with_seq).to_string() + "\n"
                   for query in queries).encode("utf-8")


def _index_paths(path: str) -> dict[str, str]:
    return {"bai": path + ".bai", "csi": path + ".csi"}


@contextlib.contextmanager
def _atomic_bam(path: str, lengths: list[int], index: bool) -> Iterator[str]:
    """Yield a temporary BAM path; on success index it and rename BAM, then index, into place.

    A stream (:func:`~gpualign_plugin.io.atomic.is_stream`) is written in place, without an index.

    The BAM is renamed before its index, so the index is never older than the BAM
    it describes; an index of the other kind left by an earlier run is removed.
    """
    if is_stream(path):
        with atomic_path(path) as stream:
            yield stream
        return
    kind = index_kind(lengths)
    index_path = _index_paths(path)[kind]
    with contextlib.ExitStack() as stack:
        tmp_index = stack.enter_context(atomic_path(index_path)) if index else None
        with atomic_path(path, suffix=".bam") as tmp_bam:
            yield tmp_bam
            if index:
                pysam.index(*(["-c"] if kind == "csi" else []), "-o", tmp_index, tmp_bam)
    for stale_kind, stale in _index_paths(path).items():
        if not (index and stale_kind == kind):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)


def write_alignments(path: str | os.PathLike, alignments: Iterable[Alignment],
                     queries: dict[str, Sequence] | None, targets: Iterable[Target],
                     scheme: ScoringScheme, command_line: str, fmt: str = "bam",
                     sort: bool = True, index: bool = True,
                     unmapped: Iterable[Sequence] = ()) -> None:
    """Write alignments as a SAM or BAM file (layout in the module docstring).

    Parameters
    ----------
    path : str or PathLike
        Output file; appears only when complete (temporary name, then rename).
    alignments : iterable of Alignment
        Usually the output of :func:`~gpualign_plugin.pairwise.placement.place`.
    queries : dict of str to Sequence, or None
        Query records by id, for SEQ. May be None for protein schemes (SEQ ``*``).
    targets : iterable of Sequence or (str, int)
        Every target record in file order; each becomes an ``@SQ`` line. A
        ``(name, length)`` pair declares a reference for the header only;
        alignments on it cannot be written (MD needs its residues).
    scheme : ScoringScheme
        Decides whether SEQ is written (DNA) or ``*`` (protein).
    command_line : str
        For the ``@PG CL`` field (tabs and newlines become spaces).
    fmt : {'bam', 'sam'}
        Output format.
    sort : bool
        Coordinate-sort the records (by target in file order, then start, then
        plus before minus strand, then input order) and declare ``SO:coordinate``;
        otherwise keep input order and declare ``SO:unsorted``.
    index : bool
        For sorted BAM only: write ``PATH.bai``, or ``PATH.csi`` when a target is
        longer than 2^29 bp. Ignored for SAM. An index left by an earlier run
        that this call does not rewrite is removed.
    unmapped : iterable of Sequence
        Queries written as unmapped records (flag 4) after all the alignments, in
        the order given (local placement: the queries with nothing significant).

    Raises
    ------
    InputError
        A query name longer than SAM's QNAME allows (:data:`QNAME_MAX_LENGTH`).
    ValueError
        An alignment on an unknown target or one given without its sequence, a
        missing query, lengths that disagree with the records, or a bad ``fmt``.
    """
    if fmt not in ("bam", "sam"):
        raise ValueError(f"fmt must be 'bam' or 'sam', not {fmt!r}")
    path = os.fspath(path)
    entries = _target_entries(targets)
    reference_ids = {name: i for i, (name, _, _) in enumerate(entries)}
    if len(reference_ids) != len(entries):
        raise ValueError("target names must be unique")
    alignments = list(alignments)
    for alignment in alignments:
        if alignment.target_id not in reference_ids:
            raise ValueError(f"alignment target {alignment.target_id!r} is not among the targets")
    order = range(len(alignments))
    if sort:
        order = sorted(order, key=lambda i: (reference_ids[alignments[i].target_id],
                                             alignments[i].target_start,
                                             alignments[i].strand == "-", i))
    header = sam_header([(name, length) for name, length, _ in entries], command_line, sort)
    queries = queries or {}
    sa_tags = supplementary_tags(alignments)
    unmapped = list(unmapped)
    check_query_names([a.query_id for a in alignments] + [q.id for q in unmapped])

    def write(tmp: str) -> None:
        with pysam.AlignmentFile(tmp, "wb" if fmt == "bam" else "w", header=header) as out:
            for i in order:
                alignment = alignments[i]
                reference_id = reference_ids[alignment.target_id]
                out.write(_record(alignment, header, reference_id, entries[reference_id][2],
                                  queries.get(alignment.query_id),
                                  scheme.is_dna and alignment.is_primary, scheme.is_dna, sa_tags[i]))
            for query in unmapped:
                out.write(_unmapped_record(query, header, scheme.is_dna))

    if fmt == "bam":
        with _atomic_bam(path, [length for _, length, _ in entries], index and sort) as tmp:
            write(tmp)
    else:
        with atomic_path(path, suffix=".sam") as tmp:
            write(tmp)


def _merge_key(record: pysam.AlignedSegment) -> tuple:
    return (record.reference_id if record.reference_id >= 0 else 1 << 62,
            record.reference_start, record.is_reverse)


def _sorted_records(path: str, bam: pysam.AlignmentFile) -> Iterator[pysam.AlignedSegment]:
    previous = None
    for record in bam.fetch(until_eof=True):
        key = _merge_key(record)
        if previous is not None and key[:2] < previous[:2]:
            raise InputError("records are not in coordinate order", path=path,
                             record=record.query_name)
        previous = key
        yield record


def _merged_programs(headers: list[dict], command_line: str | None) -> list[dict]:
    """One ``@PG`` per distinct input program line; colliding IDs get ``.1``, ``.2``, ... suffixes."""
    programs: list[dict] = []
    final_ids: dict[tuple, str] = {}
    used: set[str] = set()
    for header in headers:
        renamed: dict[str, str] = {}
        added: list[dict] = []
        for line in header.get("PG", []):
            original = tuple(sorted(line.items()))
            if original in final_ids:
                renamed[line["ID"]] = final_ids[original]
                continue
            new_id, suffix = line["ID"], 0
            while new_id in used:
                suffix += 1
                new_id = f"{line['ID']}.{suffix}"
            final_ids[original] = renamed[line["ID"]] = new_id
            used.add(new_id)
            added.append(dict(line, ID=new_id))
        for line in added:
            if line.get("PP") in renamed:
                line["PP"] = renamed[line["PP"]]
        programs.extend(added)
    if command_line is not None:
        from gpualign_plugin.version import __version__

        merge_id, suffix = "gpualign.merge", 0
        while merge_id in used:
            suffix += 1
            merge_id = f"gpualign.merge.{suffix}"
        programs.append({"ID": merge_id, "PN": "gpualign", "VN": __version__,
                         "CL": _one_line(command_line)})
    return programs


@contextlib.contextmanager
def _htslib_quiet():
    """htslib's own messages off while the block runs, and the error pysam's half-made file
    object raises again as it is freed ("Exception ignored in ... __dealloc__"): a damaged
    input's one-line :class:`InputError` says what they would say, several lines before it."""
    previous, hooks = pysam.set_verbosity(0), (sys.unraisablehook, sys.excepthook)
    sys.unraisablehook = lambda unraisable: None
    sys.excepthook = lambda *exc_info: None  # Cython prints an unraisable error through it first
    try:
        yield
    finally:
        pysam.set_verbosity(previous)
        sys.unraisablehook, sys.excepthook = hooks


def merge_bams(out_path: str | os.PathLike, inputs: list[str | os.PathLike],
               command_line: str | None = None, index: bool = True) -> None:
    """Merge coordinate-sorted BAMs of shards (same ``@SQ`` lines) into one sorted, indexed BAM.

    Parameters
    ----------
    out_path : str or PathLike
        The merged BAM; appears only when complete, with ``.bai`` or ``.csi``
        (as :func:`write_alignments` chooses) when ``index`` is true.
    inputs : list of str or PathLike
        Shard BAMs, each sorted by coordinate, all with the same references in the
        same order.
    command_line : str, optional
        When given, an extra ``@PG ID:gpualign.merge`` line records it.
    index : bool
        Write the index.

    Notes
    -----
    The header keeps the first input's ``@HD`` and ``@SQ`` lines and every
    distinct ``@PG`` line of the inputs (colliding IDs renamed deterministically).
    Records are merged by (reference, position, strand) and, for equal keys, in the
    order of ``inputs``, so the output does not depend on timing.

    Raises
    ------
    InputError
        No inputs, an unreadable input, an input not declared coordinate-sorted or
        found out of order, or ``@SQ`` lines that differ from the first input's.
    """
    if not inputs:
        raise InputError("no BAM files to merge")
    paths = [os.fspath(p) for p in inputs]
    with contextlib.ExitStack() as stack:
        stack.enter_context(_htslib_quiet())
        files = []
        for path in paths:
            if not os.path.isfile(path):
                raise InputError("no such file", path=path)
            try:
                files.append(stack.enter_context(pysam.AlignmentFile(path, "rb")))
            except (ValueError, OSError) as exc:
                message = f"not a readable BAM file ({exc})"
                exc.__traceback__ = None  # pysam's half-made file object goes now, while it is kept quiet
                raise InputError(message, path=path) from None
        headers = [f.header.to_dict() for f in files]
        references = headers[0].get("SQ", [])
        for path, header in zip(paths, headers):
            if header.get("HD", {}).get("SO") != "coordinate":
                raise InputError("not sorted by coordinate (@HD SO is not 'coordinate')", path=path)
            if header.get("SQ", []) != references:
                raise InputError(f"reference sequences (@SQ) differ from those of {paths[0]}",
                                 path=path)
        merged = {"HD": headers[0]["HD"], "SQ": references,
                  "PG": _merged_programs(headers, command_line)}
        out_header = pysam.AlignmentHeader.from_text(_header_text(merged))
        streams = [_sorted_records(path, f) for path, f in zip(paths, files)]
        out_path = os.fspath(out_path)
        with _atomic_bam(out_path, [sq["LN"] for sq in references], index) as tmp:
            with pysam.AlignmentFile(tmp, "wb", header=out_header) as out:
                for record in heapq.merge(*streams, key=_merge_key):
                    out.write(record)
