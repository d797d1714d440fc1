"""Outputs of syntenic alignment: block table (TSV), BED per sequence, PAF, dot plot (PNG).

Coordinates everywhere are 0-based half-open ``[start, end)`` on the forward
strand, as in BED and PAF (the block table says so in its header). Blocks are
numbered from 1 in alignment order (along the target) within each pair; the number
joins the table, the BED names (``match_3``, ``difference_2``) and the PAF ``bk:i`` tag.

Strand: a pair aligned on ``-`` (the query's reverse complement against the target) is
reported as gpualign pairwise reports minus-strand alignments: forward-strand query
coordinates (so its blocks run down the query), strand ``-`` in the PAF strand column,
the BED strand column of both sequences and the table's ``strand`` column, and CIGARs
that read the reverse-complemented query along the target.

PAF: one line per matching region through :func:`gpualign_plugin.io.paf.paf_line`,
with ``tp:A:P``, ``AS:i`` the region's score, ``NM:i``, ``cg:Z`` the region's
CIGAR, and mapping quality 255 (PAF's "missing": a syntenic region is not a
placement among alternatives, so no MAPQ is computed).
"""

from __future__ import annotations

import os
from typing import Iterable

from gpualign_plugin.io.atomic import atomic_path, atomic_text
from gpualign_plugin.io.paf import paf_line
from gpualign_plugin.model import Alignment, SyntenicAlignment, SyntenicBlock

TABLE_COLUMNS = ("query_id", "target_id", "block", "type", "query_start", "query_end",
                 "target_start", "target_end", "query_len", "target_len", "score", "identity_pct",
                 "cigar", "strand")
"""Columns of the block table, in order (``strand`` last, so the older columns keep their places)."""


def block_name(block: SyntenicBlock, number: int) -> str:
    """Name of a block in BED and the table: ``match_N`` or ``difference_N`` (``N`` from 1)."""
    return f"{block.kind}_{number}"


def write_block_table(path: str | os.PathLike, alignments: Iterable[SyntenicAlignment],
                      description: str, command: str, unit: str = "bp") -> None:
    """Write the block table (TSV, one row per block, in the spirit of MUMmer's show-coords).

    Parameters
    ----------
    path : str or PathLike
        Output file, written atomically.
    alignments : iterable of SyntenicAlignment
        One per aligned pair, in output order.
    description : str
        Scoring description for the header (scheme and block penalty).
    command : str
        The command line, for the header.
    unit : str
        Length unit in the per-pair summary lines (``'bp'`` or ``'aa'``).

    Notes
    -----
    Header lines start with ``#``: the tool and scoring, the command, the
    coordinate convention, one summary line per pair, then the column names
    (:data:`TABLE_COLUMNS`). ``identity_pct`` is identical columns over all
    columns of a matching region in percent (two decimals) and ``.`` for a
    difference block, as is its ``cigar``. ``strand`` is the pair's: ``+``, or ``-`` when
    the query's reverse complement was aligned (the rows then run down the query).
    """
    alignments = list(alignments)
    with atomic_text(path) as handle:
        handle.write(f"# gpualign syntenic: {description}\n")
        handle.write(f"# command: {command}\n")
        handle.write("# coordinates: 0-based half-open [start, end) on the forward strand "
                     "(as BED and PAF); len = end - start; strand -: the query's reverse "
                     "complement is aligned, the CIGAR reads it\n")
        for result in alignments:
            handle.write(f"# pair {result.query_id} ({result.query_length} {unit}) vs {result.target_id} "
                         f"({result.target_length} {unit}), strand {result.strand}: "
                         f"score {result.score}, "
                         f"{len(result.matching_regions)} matching regions, "
                         f"{len(result.difference_blocks)} difference blocks\n")
        handle.write("#" + "\t".join(TABLE_COLUMNS) + "\n")
        for result in alignments:
            for number, block in enumerate(result.blocks, start=1):
                is_match = block.kind == "match"
                row = [result.query_id, result.target_id, number, block.kind, block.query_start,
                       block.query_end, block.target_start, block.target_end, block.query_span,
                       block.target_span, block.score,
                       f"{100 * block.identity:.2f}" if is_match else ".",
                       str(block.cigar) if is_match else ".", result.strand]
                handle.write("\t".join(str(x) for x in row) + "\n")


def write_bed(path: str | os.PathLike, alignments: Iterable[SyntenicAlignment], side: str) -> None:
    """Write the blocks on one sequence as BED6 (atomically).

    ``side`` is ``'query'`` or ``'target'``. Columns: sequence id, start, end,
    :func:`block_name`, score (identity x 1000 for a matching region, 0 for a
    difference block) and the pair's strand (``-`` on both sides when the query's
    reverse complement was aligned, as ``bedtools bamtobed`` marks a reverse read on the
    reference). A difference block empty on this side is a zero-length interval
    (``start == end``), BED's form for an insertion point.
    """
    if side not in ("query", "target"):
        raise ValueError(f"side must be 'query' or 'target', got {side!r}")
    with atomic_text(path) as handle:
        for result in alignments:
            chrom = result.query_id if side == "query" else result.target_id
            for number, block in enumerate(result.blocks, start=1):
                start, end = ((block.query_start, block.query_end) if side == "query"
                              else (block.target_start, block.target_end))
                score = round(1000 * block.identity) if block.kind == "match" else 0
                handle.write(f"{chrom}\t{start}\t{end}\t{block_name(block, number)}\t{score}\t"
                             f"{result.strand}\n")


def region_alignment(result: SyntenicAlignment, block: SyntenicBlock) -> Alignment:
    """A matching region as a pairwise :class:`~gpualign_plugin.model.Alignment` (for PAF)."""
    return Alignment(result.query_id, result.target_id, result.query_length, result.target_length,
                     block.query_start, block.query_end, block.target_start, block.target_end,
                     result.strand, block.score, block.cigar, mode="syntenic", is_primary=True,
                     mapq=255)


def write_paf(path: str | os.PathLike, alignments: Iterable[SyntenicAlignment],
              queries: dict | None = None, targets: dict | None = None) -> None:
    """Write one PAF line per matching region (atomically), with a ``bk:i`` tag: the block's number.
    ``queries`` and ``targets``: the DNA records by id, as :func:`gpualign_plugin.io.paf.write_paf`
    takes them."""
    dna = queries is not None and targets is not None
    with atomic_text(path) as handle:
        for result in alignments:
            records = (queries[result.query_id], targets[result.target_id]) if dna else ()
            for number, block in enumerate(result.blocks, start=1):
                if block.kind == "match":
                    handle.write(f"{paf_line(region_alignment(result, block), *records)}\tbk:i:{number}\n")


def write_dotplot(path: str | os.PathLike, result: SyntenicAlignment, unit: str = "bp") -> None:
    """Draw the alignment as a dot plot PNG (matplotlib, Agg backend), written atomically.

    The target runs along x and the query along y (forward strand), both in ``unit``
    (``'bp'`` or ``'aa'``). Each matching region is a line segment from its start to its
    end, falling from left to right on the ``'-'`` strand (the query's reverse complement
    runs down the query); each difference block is a shaded rectangle spanning its two
    intervals (a block empty on one side is drawn as a thin line).
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    figure = Figure(figsize=(6, 6), dpi=100)
    axes = figure.add_subplot(1, 1, 1)
    for block in result.blocks:
        if block.kind == "difference":
            axes.add_patch(Rectangle((block.target_start, block.query_start), block.target_span,
                                     block.query_span, facecolor="0.85", edgecolor="0.6",
                                     linewidth=0.5))
    for block in result.matching_regions:
        query_ends = ([block.query_start, block.query_end] if result.strand == "+"
                      else [block.query_end, block.query_start])
        axes.plot([block.target_start, block.target_end], query_ends,
                  color="tab:blue", linewidth=1.5, solid_capstyle="butt")
    axes.set_xlim(0, max(result.target_length, 1))
    axes.set_ylim(0, max(result.query_length, 1))
    axes.set_xlabel(f"{result.target_id} ({unit})")
    aligned = ", reverse complement aligned" if result.strand == "-" else ""
    axes.set_ylabel(f"{result.query_id} ({unit}{aligned})")
    axes.set_title(f"{len(result.matching_regions)} matching regions, "
                   f"{len(result.difference_blocks)} difference blocks (shaded)", fontsize=9)
    axes.ticklabel_format(style="plain", useOffset=False)
    figure.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, format="png")
