"""The classified dot plot of a genome comparison (PNG, matplotlib).

One panel per reference record that has alignments. The x axis is the reference record;
the y axis holds the contigs aligned to it, laid end to end in the order of their home
region on that record, each turned so that its home region runs forward (as mummerplot's
``--layout`` orders and orients query sequences), so a collinear assembly is a diagonal.
Each matching region is a segment coloured by what it is: forward (the contig's home
orientation), inverted (an inversion, or any block running against its contig's home
orientation) or relocated (a relocation or translocation). Thin grey lines separate contigs.
"""

from __future__ import annotations

import os

from gpualign_plugin.compare.api import GenomeComparison
from gpualign_plugin.io.atomic import atomic_path

COLOURS = {"forward": "#1f5fa8", "inverted": "#c0392b", "relocated": "#1e9e50"}
"""Segment colour of each class (legend order)."""


def block_class(comparison: GenomeComparison, block, home_strand: dict) -> str:
    """``'forward'``, ``'inverted'`` or ``'relocated'`` for one matching region."""
    region = next(r for r in comparison.regions if r.id == block.region)
    if region.role in ("relocation", "translocation"):
        return "relocated"
    if region.role == "inversion" or block.strand != home_strand.get(block.query_id, "+"):
        return "inverted"
    return "forward"


def layout(comparison: GenomeComparison, target_id: str):
    """The contigs of one panel: ``[(contig, offset, length, flipped)]`` bottom to top.

    Contigs whose home region lies on ``target_id`` come in order of its reference start;
    contigs with other blocks on it (translocated pieces) follow in order of their first
    block there.
    """
    homes = {r.query_id: r for r in comparison.regions if r.role == "home"}
    here = {}
    for block in comparison.blocks:
        if block.target_id == target_id:
            here.setdefault(block.query_id, block.target_start)
    def key(contig):
        home = homes.get(contig)
        if home is not None and home.target_id == target_id:
            return (0, home.target_start, contig)
        return (1, here[contig], contig)
    rows, offset = [], 0
    for contig in sorted(here, key=key):
        length = comparison.query_lengths[contig]
        home = homes.get(contig)
        rows.append((contig, offset, length, home is not None and home.strand == "-"))
        offset += length
    return rows


def write_dotplot(path: str | os.PathLike, comparison: GenomeComparison, title: str,
                  reference_name: str = "reference", query_name: str = "assembly") -> None:
    """Draw the classified dot plot to ``path`` (PNG, written atomically).

    Parameters
    ----------
    path : str or PathLike
        Output PNG.
    comparison : GenomeComparison
        What to draw.
    title : str
        Figure title.
    reference_name, query_name : str
        Axis labels (usually the file names).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    records = [t for t in comparison.target_lengths
               if any(b.target_id == t for b in comparison.blocks)]
    home_strand = {r.query_id: r.strand for r in comparison.regions if r.role == "home"}
    columns = min(3, max(1, len(records)))
    rows_of_panels = max(1, -(-len(records) // columns))
    figure, axes = plt.subplots(rows_of_panels, columns, figsize=(5.5 * columns, 5.2 * rows_of_panels),
                                squeeze=False)
    for axis in axes.flat[len(records):]:
        axis.set_visible(False)
    if not records:
        axes[0, 0].set_visible(True)
        axes[0, 0].text(0.5, 0.5, "no alignments", ha="center", va="center")
    for axis, target_id in zip(axes.flat, records):
        contigs = layout(comparison, target_id)
        place = {name: (offset, length, flipped) for name, offset, length, flipped in contigs}
        for name, offset, length, _ in contigs[1:]:
            axis.axhline(offset, color="#cccccc", linewidth=0.6)
        for block in comparison.blocks:
            if block.target_id != target_id:
                continue
            offset, length, flipped = place[block.query_id]
            q0, q1 = ((length - block.query_end, length - block.query_start) if flipped
                      else (block.query_start, block.query_end))
            forward = (block.strand == "+") != flipped
            ys = (offset + q0, offset + q1) if forward else (offset + q1, offset + q0)
            axis.plot((block.target_start, block.target_end), ys, linewidth=1.6,
                      color=COLOURS[block_class(comparison, block, home_strand)],
                      solid_capstyle="butt")
        total = sum(length for _, _, length, _ in contigs)
        axis.set_xlim(0, comparison.target_lengths[target_id])
        axis.set_ylim(0, max(total, 1))
        axis.set_xlabel(f"{reference_name}: {target_id} (bp)")
        axis.set_ylabel(f"{query_name}: {len(contigs)} contig(s) (bp)")
        axis.set_title(target_id, fontsize=10)
        axis.ticklabel_format(style="plain", useOffset=False)
    handles = [Line2D([0], [0], color=colour, linewidth=2.5, label=name)
               for name, colour in COLOURS.items()]
    figure.suptitle(title, fontsize=11)
    figure.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.955), ncol=3,
                  frameon=False, fontsize=9)
    figure.tight_layout(rect=(0, 0, 1, 0.91))
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=100)
    plt.close(figure)
