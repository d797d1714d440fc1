"""Timings of the GPU pairwise engine's variants, for docs/GPU.md's optimisation table.

``gpualign bench`` times the public functions; this module times what they are
made of: the scoring sweep with each rows-per-lane setting, with and without
DPX instructions and with and without block pruning, and the phases of a full alignment (scoring sweep with
checkpoints, chunk re-solves, host traceback). Run it on a GPU machine with
``python3 -m gpualign_plugin.cli.bench_variants [SIZE ...]`` (``scripts/gpu-check`` does).
"""

from __future__ import annotations

import sys
import time

from gpualign_plugin.cli.bench import _time, parse_size, related_pair
from gpualign_plugin.scoring import ScoringScheme

SCHEME = ScoringScheme.dna(match=1, mismatch=-3, gap_open=3, gap_extend=2)
"""The issue's benchmark scoring: match 1, mismatch -3, gap open 3, extend 2."""


VARIANTS = ((16, True, True, False), (8, True, True, False), (4, True, True, False), (2, True, True, False),
            (16, False, True, False), (None, True, False, False), (None, True, False, True))
"""Scoring variants timed: (rows per lane, None for the engine's choice; DPX instructions on; block
pruning on; the packed sweep of packed16.cu instead of the striped one)."""


def variant_rows(sizes=((100_000, 100_000), (1_000_000, 1_000_000)), repeat: int = 3, device: int = 0):
    """Measure each scoring variant and the phases of a full local alignment.

    Parameters
    ----------
    sizes : sequence of (int, int)
        Query and target lengths of the related DNA pairs (2% substitutions).
    repeat : int
        Timed runs per row; the median is reported.
    device : int
        CUDA device ordinal.

    Returns
    -------
    list of dict
        One row per measurement: ``what``, ``device``, ``size``, ``seconds``,
        ``gcups`` (cells of the full matrix over seconds, 1e9), ``peak_gpu_mib``
        and ``detail`` (score, phase times, chunk count).
    """
    import cupy

    from gpualign_plugin.pairwise import gpu as pairwise
    from gpualign_plugin.runtime.gpu import probe

    name = probe(device).name
    pool = cupy.get_default_memory_pool()
    rows = []

    def add(what, size, seconds, detail):
        m, n = size
        rows.append({"what": what, "device": name, "size": f"{m}x{n}", "seconds": seconds,
                     "gcups": m * n / seconds / 1e9, "peak_gpu_mib": pool.total_bytes() / 2**20,
                     "detail": detail})

    for m, n in sizes:
        query, target = related_pair(m, n, 0.02, 1)
        for lane_rows, dpx, prune, packed in VARIANTS:
            capability = None if dpx else (8, 0)
            counts: dict = {}
            seconds, result = _time(
                lambda: pairwise._score(query, target, SCHEME, "local", device, lane_rows, capability,
                                        prune=prune, profile=counts, packed=packed),
                repeat)
            what = "packed sweep (16-bit, two strips a warp)" if packed else \
                f"score R={lane_rows or 'auto'} {'DPX' if dpx else 'no DPX'}{'' if prune else ', no pruning'}"
            add(what, (m, n), seconds,
                f"score {result.score} end ({result.query_end},{result.target_end}); "
                f"pruned {counts['pruned_cells'] / (m * n):.1%} of the cells")
        profile: dict = {}
        seconds, result = _time(
            lambda: pairwise.align_pair(query, target, SCHEME, "local", device, profile=profile), repeat)
        phases = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in profile.items())
        add("align (default)", (m, n), seconds, f"score {result.score}; {phases}")
        # The same plan with the striped score pass (checkpoints from striped.cu), for comparison.
        plan = pairwise.MemoryPlan(tuple(profile["intervals"]), profile["window"], profile["planned_bytes"], 0.0,
                                   tuple(profile["rows_per_lane"]))
        striped: dict = {}
        seconds, other = _time(lambda: pairwise._align_planned(query, target, SCHEME, "local", [device], plan,
                                                               time.perf_counter(), striped, packed=False), repeat)
        add("align, striped score pass", (m, n), seconds,
            f"score {other.score}; same alignment: {'yes' if other == result else 'NO'}; "
            f"score_pass_s {striped['score_pass_s']:.3f}, traceback_s {striped['traceback_s']:.3f}, "
            f"pruned_cells {striped['pruned_cells']}")
    return rows


def format_rows(rows) -> str:
    """The rows as an aligned text table."""
    header = ["what", "size", "seconds", "GCUPS", "peak GPU MiB", "detail"]
    lines = [[r["what"], r["size"], f"{r['seconds']:.4f}", f"{r['gcups']:.1f}", f"{r['peak_gpu_mib']:.0f}",
              r["detail"]] for r in rows]
    widths = [max(len(x) for x in column) for column in zip(header, *lines)]
    out = [f"# device: {rows[0]['device']}" if rows else "# no rows"]
    for line in [header] + lines:
        out.append("  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip())
    return "\n".join(out)


def main(argv=None) -> int:
    """Print the variant table for the sizes given as ``MxN`` arguments (default 100 kbp and 1 Mbp)."""
    args = sys.argv[1:] if argv is None else argv
    sizes = [parse_size(a) for a in args] or [(100_000, 100_000), (1_000_000, 1_000_000)]
    print(format_rows(variant_rows(sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
