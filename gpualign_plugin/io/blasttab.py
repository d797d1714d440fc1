"""Database-search outputs: BLAST tabular (``-outfmt 6``) and the hits TSV.

BLAST tabular: the twelve standard columns, tab-separated, no header::

    qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore

1-based inclusive coordinates; on the minus strand (DNA) the query interval is
given on its forward strand and ``sstart > send``, as BLASTN writes a Plus/Minus
hit. ``pident`` is ``%.3f`` of identical columns over all columns; ``length``
counts alignment columns (gaps included); ``gapopen`` counts gaps. E-values and
bit scores are formatted as BLAST+ formats them in tabular output
(``CBlastTabularInfo::SetScores``; see :func:`format_evalue`, :func:`format_bit_score`).

Hits TSV: one header line (``#`` comment lines above it state the scoring scheme,
the database size and where the statistics come from), then per hit::

    qseqid sseqid qlen slen strand score bitscore evalue qstart qend sstart send cigar

with 0-based half-open forward-strand coordinates (the project convention, as in
PAF), the raw score, ``bitscore`` as ``%.1f``, ``evalue`` as ``%.3e`` and the
``=XID`` CIGAR along the target.
"""

from __future__ import annotations

import os
from typing import IO, Iterable, Union

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import text_output
from gpualign_plugin.io.text import text_input

BLAST_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend",
                 "sstart", "send", "evalue", "bitscore")
"""The twelve columns of BLAST's ``-outfmt 6``, in order."""

HITS_COLUMNS = ("qseqid", "sseqid", "qlen", "slen", "strand", "score", "bitscore", "evalue",
                "qstart", "qend", "sstart", "send", "cigar")
"""Columns of the hits TSV, in order."""


def format_evalue(evalue: float) -> str:
    """An E-value as BLAST+ tabular output writes it.

    ``0.0`` below 1e-180; ``%.2e`` below 0.0009; ``%.3f`` below 0.1; ``%.2f`` below
    1; ``%.1f`` below 10; ``%.0f`` from 10 on (NCBI ``CAlignFormatUtil::GetScoreString``
    with the tabular ``%.2e`` override).
    """
    if evalue < 1.0e-180:
        return "0.0"
    if evalue < 0.0009:
        return f"{evalue:.2e}"
    if evalue < 0.1:
        return f"{evalue:.3f}"
    if evalue < 1.0:
        return f"{evalue:.2f}"
    if evalue < 10.0:
        return f"{evalue:.1f}"
    return f"{evalue:.0f}"


def format_bit_score(bits: float) -> str:
    """A bit score as BLAST+ writes it: ``%.3e`` above 99999, the integer part
    (truncated, ``%3ld``) above 99.9, else ``%4.1f`` (space-padded to 4 characters)."""
    if bits > 99999:
        return f"{bits:.3e}"
    if bits > 99.9:
        return f"{int(bits):3d}"
    return f"{bits:4.1f}"


def blast_line(hit) -> str:
    """One BLAST tabular line (no newline) of a :class:`~gpualign_plugin.search.api.Hit`."""
    a = hit.alignment
    if a.strand == "-":
        sstart, send = a.target_end, a.target_start + 1
    else:
        sstart, send = a.target_start + 1, a.target_end
    return (f"{a.query_id}\t{a.target_id}\t{100.0 * a.identity:.3f}\t{a.columns}\t{a.mismatches}\t"
            f"{a.gap_opens}\t{a.query_start + 1}\t{a.query_end}\t{sstart}\t{send}\t"
            f"{format_evalue(hit.evalue)}\t{format_bit_score(hit.bit_score)}")


def write_blast_tab(path_or_handle: Union[str, os.PathLike, IO[str]], hits: Iterable) -> None:
    """Write hits as BLAST tabular (``-outfmt 6``), one line each, in the given order.

    A path is written atomically (temporary name, renamed when complete); a
    handle is written to and left open.
    """
    with text_output(path_or_handle) as handle:
        for hit in hits:
            handle.write(blast_line(hit) + "\n")


def read_blast_tab(path: str | os.PathLike) -> list[dict]:
    """Read BLAST tabular (12 columns) into dicts keyed by :data:`BLAST_COLUMNS`.

    Integer columns become ``int``, ``pident``, ``evalue`` and ``bitscore``
    ``float``; ``#`` lines are skipped. Raises :class:`InputError` naming the
    line of a row that does not have twelve columns or has a number column that is none.
    """
    rows = []
    path = os.fspath(path)
    with text_input(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(BLAST_COLUMNS):
                raise InputError(f"expected {len(BLAST_COLUMNS)} tab-separated columns, got "
                                 f"{len(fields)}", path=path, position=number, position_kind="line")
            row = dict(zip(BLAST_COLUMNS, fields))
            for names, kind in ((("length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send"), int),
                                (("pident", "evalue", "bitscore"), float)):
                for name in names:
                    try:
                        row[name] = kind(row[name])
                    except ValueError:
                        raise InputError(f"column {name} is not a number: {row[name]!r}", path=path,
                                         position=number, position_kind="line") from None
            rows.append(row)
    return rows


def write_hits_tsv(path_or_handle: Union[str, os.PathLike, IO[str]], result, scheme) -> None:
    """Write a finished :class:`~gpualign_plugin.search.api.SearchResult` as the hits TSV.

    Comment lines first (scheme, database size, statistics and their source,
    coordinate convention), then the header line and one line per hit
    (:func:`hits_tsv_header`, :func:`hits_tsv_line`).
    """
    with text_output(path_or_handle) as handle:
        handle.write(hits_tsv_header(result, scheme))
        for hit in result.hits:
            handle.write(hits_tsv_line(hit) + "\n")


def hits_tsv_header(result, scheme) -> str:
    """The comment lines and column line of the hits TSV (newline-terminated) of a search whose
    ``result.parameters`` are set (its hits are not needed)."""
    return (f"# gpualign search: {scheme.describe()}; top {result.top} hits per query\n"
            f"# database: {result.database_sequences} sequences, {result.database_residues} residues\n"
            f"# statistics: {result.parameters.describe()}\n"
            "# coordinates: 0-based half-open on the forward strand; CIGAR along the "
            "target (reverse-complemented query on strand -)\n"
            + "\t".join(HITS_COLUMNS) + "\n")


def hits_tsv_line(hit) -> str:
    """One line (no newline) of the hits TSV for a finished hit."""
    a = hit.alignment
    return (f"{a.query_id}\t{a.target_id}\t{a.query_length}\t{a.target_length}\t{a.strand}\t"
            f"{a.score}\t{hit.bit_score:.1f}\t{hit.evalue:.3e}\t{a.query_start}\t{a.query_end}\t"
            f"{a.target_start}\t{a.target_end}\t{a.cigar}")
