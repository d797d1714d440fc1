"""Tables and figures of the workflow report (run by Snakemake's ``script:``).

One script for the report rules, dispatched on the rule's ``params.kind`` (rule names
change when the rules are imported as a module):
``throughput`` (the jobs' --stats JSON -> TSV and HTML table),
``identity`` (PAF alignments -> one identity histogram per kind, weighted by columns),
``bam_stats`` (each query genome's BAM -> samtools-stats-like figures, TSV and HTML),
``placement`` (each query genome's BAM -> one row per placed piece or unmapped record),
``hits`` (merged BLAST tabular hits -> HTML table),
``three_way`` (the merged MAF -> one row per block, TSV and HTML) and
``differences`` (``gpualign compare``'s differences table -> a sortable HTML table; the
genome dot plot is ``gpualign compare``'s own). Values are
copied from files the jobs wrote, or counted from them (the BAM figures by
gpualign_plugin.io.bam_stats); nothing is aligned here.
"""

import html
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pysam  # noqa: E402

from gpualign_plugin.io.atomic import atomic_path, atomic_text  # noqa: E402
from gpualign_plugin.io.bam_stats import bam_statistics  # noqa: E402
from gpualign_plugin.io.maf import read_maf  # noqa: E402
from gpualign_plugin.io.paf import read_paf  # noqa: E402

THROUGHPUT_COLUMNS = ("job", "command", "engine", "device", "threads", "cells", "seconds",
                      "gcups", "peak_gpu_memory_bytes")
BAM_COLUMNS = ("genome", "records", "mapped", "unmapped", "supplementary", "secondary",
               "alignment columns", "identity %", "reference bp", "covered bp", "coverage %",
               "mean depth")
THREE_WAY_COLUMNS = ("block", "rows", "lengths", "columns", "score", "identity 1-2 %",
                     "identity 1-3 %", "identity 2-3 %", "columns all identical")
BLAST_COLUMNS = ("query", "subject", "identity %", "length", "mismatches", "gap opens",
                 "q.start", "q.end", "s.start", "s.end", "E-value", "bit score")


def html_table(title, columns, rows):
    """A self-contained HTML page with one table."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                     for row in rows)
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
            "</title><style>table{border-collapse:collapse;font-family:sans-serif;font-size:13px}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>"
            f"<h3>{html.escape(title)}</h3><table><tr>{head}</tr>\n{body}\n</table></body></html>\n")


def throughput(snakemake):
    rows = []
    for path in snakemake.input.stats:
        with open(path, encoding="utf-8") as handle:
            stats = json.load(handle)
        job = os.path.relpath(path, "results/stats")[:-len(".json")]
        rows.append([job, stats["command"], stats["engine"], stats["device"], stats["threads"],
                     stats["cells"], f"{stats['seconds']:.3f}", f"{stats['gcups']:.4f}",
                     stats["peak_gpu_memory_bytes"]])
    write_table(snakemake, "Throughput of each alignment job", THROUGHPUT_COLUMNS, rows)


def identity(snakemake):
    kinds = [kind for kind in ("pairwise", "syntenic") if kind in snakemake.input.keys()]
    figure, axes = plt.subplots(len(kinds), 1, figsize=(6, 2.2 + 1.8 * len(kinds)),
                                squeeze=False)
    for kind, axis in zip(kinds, axes[:, 0]):
        values, weights = [], []
        for path in snakemake.input[kind]:
            for row in read_paf(path):
                if row["alen"] > 0:
                    values.append(100.0 * row["nmatch"] / row["alen"])
                    weights.append(row["alen"])
        axis.hist(values, bins=50, range=(0, 100), weights=weights, color="#3b75af")
        axis.set_xlabel("identity of the alignment (% of columns)")
        axis.set_ylabel("alignment columns")
        files = len(snakemake.input[kind])
        axis.set_title(f"{kind}: {len(values)} alignment{'s' * (len(values) != 1)} from "
                       f"{files} PAF file{'s' * (files != 1)}")
        print(f"identity histogram, {axis.get_title()}", file=sys.stderr)
    figure.tight_layout()
    with atomic_path(snakemake.output.png, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=100)
    plt.close(figure)


def write_table(snakemake, title, columns, rows):
    """The rule's ``tsv`` and ``html`` outputs: ``rows`` under ``columns``."""
    with atomic_text(snakemake.output.tsv) as handle:
        handle.write("\t".join(columns) + "\n")
        for row in rows:
            handle.write("\t".join(str(value) for value in row) + "\n")
    write_page(snakemake.output.html, title, columns, rows)


def write_page(path, title, columns, rows, script=""):
    """An HTML page of ``rows`` under ``columns`` at ``path`` (``script`` before its end).

    One line on stderr, the rule's log, says how many rows it holds.
    """
    with atomic_text(path) as handle:
        handle.write(html_table(title, columns, rows).replace("</body>", script + "</body>"))
    print(f"{title}: {len(rows)} row{'s' * (len(rows) != 1)} in {path}", file=sys.stderr)


def bam_stats(snakemake):
    rows = []
    for path in snakemake.input.bams:
        stats = bam_statistics(path)
        rows.append([os.path.basename(path)[:-len(".bam")], stats.records, stats.mapped,
                     stats.unmapped, stats.supplementary, stats.secondary, stats.columns,
                     f"{stats.identity:.2f}", stats.reference_length, stats.covered_bases,
                     f"{stats.coverage:.2f}", f"{stats.mean_depth:.3f}"])
    write_table(snakemake, "BAM statistics per query genome", BAM_COLUMNS, rows)


PLACEMENT_COLUMNS = ("genome", "query", "length", "kind", "q.start", "q.end", "reference",
                     "r.start", "r.end", "strand", "MAPQ", "E-value", "identity %")


def placed_pieces(genome, bam):
    """One row per record of ``bam``: the piece's query and reference intervals, or unmapped."""
    rows = []
    with pysam.AlignmentFile(bam, "rb") as handle:
        for record in handle:
            length = record.infer_read_length() or record.query_length
            if record.is_unmapped:
                rows.append([genome, record.query_name, length, "unmapped"] + [""] * 9)
                continue
            ops = record.cigartuples
            head = ops[0][1] if ops[0][0] in (4, 5) else 0
            tail = ops[-1][1] if ops[-1][0] in (4, 5) else 0
            start, end = (tail, length - head) if record.is_reverse else (head, length - tail)
            columns = sum(n for op, n in ops if op in (0, 1, 2, 7, 8))
            identity = 100.0 * (columns - record.get_tag("NM")) / columns if columns else 0.0
            kind = ("secondary" if record.is_secondary else
                    "supplementary" if record.is_supplementary else "primary")
            evalue = f"{record.get_tag('ZE'):.2e}" if record.has_tag("ZE") else ""
            rows.append([genome, record.query_name, length, kind, start + 1, end,
                         record.reference_name, record.reference_start + 1, record.reference_end,
                         "-" if record.is_reverse else "+", record.mapping_quality, evalue,
                         f"{identity:.2f}"])
    return rows


def placement(snakemake):
    rows = []
    for path in snakemake.input.bams:
        rows += placed_pieces(os.path.basename(path)[:-len(".bam")], path)
    write_table(snakemake, "Every placed piece of each query genome", PLACEMENT_COLUMNS, rows)


def pair_identity(first, second):
    """Identical columns / columns where both rows hold a residue, in percent."""
    both = [(a, b) for a, b in zip(first.upper(), second.upper()) if a != "-" and b != "-"]
    return 100.0 * sum(a == b for a, b in both) / len(both) if both else 0.0


def three_way(snakemake):
    rows = []
    for number, block in enumerate(read_maf(snakemake.input.maf), start=1):
        texts = block.rows
        identical = sum(1 for column in zip(*(text.upper() for text in texts))
                        if column[0] != "-" and len(set(column)) == 1)
        rows.append([number, " ".join(block.ids),
                     " ".join(str(end - start) for start, end in zip(block.starts, block.ends)),
                     len(texts[0]), block.score]
                    + [f"{pair_identity(texts[a], texts[b]):.1f}" for a, b in ((0, 1), (0, 2), (1, 2))]
                    + [identical])
    write_table(snakemake, "Three-way alignments (one MAF block per triplet)", THREE_WAY_COLUMNS,
                rows)


def hits(snakemake):
    with open(snakemake.input.hits, encoding="utf-8") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle
                if line.strip() and not line.startswith("#")]
    write_page(snakemake.output.html, "Top hits of each query (BLAST tabular)", BLAST_COLUMNS, rows)


SORT_SCRIPT = """<script>
document.querySelectorAll('th').forEach(function (th, column) {
  th.style.cursor = 'pointer';
  th.title = 'click to sort';
  th.addEventListener('click', function () {
    var table = th.closest('table');
    var rows = Array.from(table.querySelectorAll('tr')).slice(1);
    var up = th.dataset.order !== 'up';
    th.dataset.order = up ? 'up' : 'down';
    rows.sort(function (a, b) {
      var x = a.children[column].textContent, y = b.children[column].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var order = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
      return up ? order : -order;
    });
    rows.forEach(function (row) { table.appendChild(row); });
  });
});
</script>"""


def differences(snakemake):
    """The differences table of ``gpualign compare`` as an HTML table sorted by a click on a column."""
    with open(snakemake.input.differences, encoding="utf-8") as handle:
        columns = handle.readline().lstrip("#").rstrip("\n").split("\t")
        rows = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    write_page(snakemake.output.html,
               f"Differences of {snakemake.wildcards.genome} (click a column to sort)",
               columns, rows, script=SORT_SCRIPT)


sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (Snakemake's script global)
{"throughput": throughput, "identity": identity, "hits": hits, "bam_stats": bam_stats,
 "placement": placement, "three_way": three_way, "differences": differences}[snakemake.params.kind](snakemake)  # noqa: F821
