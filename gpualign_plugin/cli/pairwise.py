"""``gpualign pairwise``: exact local placement (default) or end-to-end alignment of query records on targets."""

from __future__ import annotations

import argparse
import functools
import logging
import math
import time

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, command_line, counted,
                                        describe_device, end_phases, memory_size, output_formats,
                                        scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, check_writable
from gpualign_plugin.pairwise.placement import DEFAULT_EVALUE, ZDROP_BITS

log = logging.getLogger("gpualign")

FORMATS = {".bam": "bam", ".sam": "sam", ".paf": "paf", ".txt": "txt"}

EPILOG = """examples:
  # place contigs on a reference: every significant local alignment, both strands, sorted and
  # indexed BAM (primary, supplementary, unmapped records) plus PAF
  gpualign pairwise --query contigs.fa --target ref.fa --out contigs.bam --out contigs.paf
  # each query end to end on every target and strand (best one primary)
  gpualign pairwise --query genes.fa --target ref.fa --mode semiglobal --out genes.paf
  # local alignment of two proteins, EMBOSS-like text
  gpualign pairwise -q a.fa -t b.fa --matrix BLOSUM62 --strand plus --out a_b.txt
  # only some pairs, on the GPU if there is one
  gpualign pairwise -q q.fa -t t.fa --pairs pairs.txt --backend auto --out hits.sam"""


def register(subparsers) -> None:
    """Add the ``pairwise`` subcommand."""
    parser = subparsers.add_parser(
        "pairwise", help="exact local/global/semi-global alignment of query records to target records",
        description="Local mode (default) places each query record: every significant local alignment "
                    "(E-value at most --evalue) on any target and strand, non-overlapping on the query, "
                    "the best primary, the others supplementary, close second placements secondary, "
                    "queries with none unmapped (docs/ALGORITHMS.md, 'Local placement'). Global and "
                    "semiglobal modes align each query end to end to every target (or the pairs listed "
                    "with --pairs) and strand and keep the best (--secondary: all) scoring at least "
                    "--min-score. Writes BAM/SAM/PAF/text.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--query", required=True, metavar="FASTA", help="query sequences (FASTA, .gz ok)")
    parser.add_argument("-t", "--target", required=True, metavar="FASTA", help="target sequences (FASTA, .gz ok)")
    parser.add_argument("-o", "--out", required=True, action="append", metavar="PATH",
                        help="output file; repeat for several; format from the extension "
                             "(.bam sorted+indexed, .sam, .paf, .txt) unless --format is given")
    parser.add_argument("--format", choices=sorted(set(FORMATS.values())),
                        help="output format for every --out (default: from each extension)")
    parser.add_argument("--mode", choices=("local", "global", "semiglobal"), default="local",
                        help="local (Smith-Waterman-Gotoh placement: every significant piece), global "
                             "(Needleman-Wunsch-Gotoh) or semiglobal (query end to end, free end gaps on "
                             "the target) [local]")
    parser.add_argument("--evalue", default=str(DEFAULT_EVALUE), metavar="E",
                        help="local mode: report alignments with an E-value at most E (Karlin-Altschul, "
                             f"whole query against all targets) [{DEFAULT_EVALUE:g}]")
    parser.add_argument("--secondary", action="store_true",
                        help="global/semiglobal: also write the alignments on the other targets and "
                             "strands as secondary (default: the best of each query only)")
    parser.add_argument("--strand", choices=("both", "plus"),
                        help="align the query's reverse complement too [both for DNA, plus for protein]")
    parser.add_argument("--pairs", metavar="FILE",
                        help="align only these pairs: 'QUERY_ID TARGET_ID' a line (local mode: each listed "
                             "query is placed on its listed targets, which are then its whole database; "
                             "queries not listed are left out; a repeated line is aligned once)")
    parser.add_argument("--min-score", type=int, metavar="N",
                        help="drop alignments scoring below N [local: 1; global/semiglobal: keep all]")
    parser.add_argument("--zdrop", type=float, default=ZDROP_BITS, metavar="BITS",
                        help="local mode: cut an alignment where its score drops more than BITS below "
                             f"its running maximum ('inf': never) [{ZDROP_BITS:g}]")
    parser.add_argument("--count-low-complexity", action="store_true",
                        help="local mode, DNA: let low-complexity query bases (poly-A, long homopolymers; "
                             "DUST score > 20) count toward an alignment's significance [off: an "
                             "alignment must be significant without them, as BLAST's DUST makes it]")
    add_scoring_options(parser, "dna")
    add_compute_options(parser)
    parser.add_argument("--gpu-memory", type=memory_size, metavar="SIZE",
                        help="GPU memory one alignment may take, e.g. 12G or 512M; checkpoints are planned "
                             "to fit, and a budget too small stops with the smallest that works "
                             "[80%% of the free GPU memory]")
    parser.add_argument("--devices", type=device_list, metavar="N,N,...",
                        help="GPU: split each long pair's matrix by columns over these CUDA devices, which "
                             "run at once (e.g. 0,1): every pair in global and semiglobal modes, and in local "
                             "mode one query on one target (a chromosome pair); the first device runs "
                             "everything else. Same results as one device [--device alone]")
    parser.set_defaults(run=run)


def device_list(text: str) -> list[int]:
    """The ``--devices`` value: comma-separated distinct CUDA device ordinals (``'0,1'``)."""
    try:
        devices = [int(x) for x in text.split(",")]
    except ValueError:
        devices = []
    if not devices or min(devices) < 0 or len(set(devices)) != len(devices):
        raise argparse.ArgumentTypeError(f"expected distinct device numbers separated by commas, got {text!r}")
    return devices


def parse_evalue(text: str) -> float:
    """The ``--evalue`` value: a positive finite number, else :class:`InputError`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"--evalue must be a positive number, got {text!r}")
    return value


def write_outputs(outputs, alignments, queries, targets, scheme, cmdline: str,
                  unmapped=()) -> None:
    """Write ``alignments`` to every ``(path, format)`` in ``outputs``: all of them, or none on failure.

    ``unmapped`` queries become unmapped records in SAM/BAM (the other formats have none).
    """
    from gpualign_plugin.io.paf import write_paf
    from gpualign_plugin.io.pairwise_text import write_pairwise_text
    from gpualign_plugin.io.sam import write_alignments

    query_by_id = {q.id: q for q in queries}
    with all_or_none() as written:
        for path, fmt in outputs:
            if fmt in ("bam", "sam"):
                write_alignments(path, alignments, query_by_id, targets, scheme, cmdline, fmt=fmt,
                                 unmapped=unmapped)
                written += [path, path + ".bai", path + ".csi"]
            elif fmt == "paf":
                records = (query_by_id, {t.id: t for t in targets}) if scheme.is_dna else ()
                write_paf(path, alignments, *records)
                written.append(path)
            else:
                write_pairwise_text(path, alignments, query_by_id, targets, scheme, cmdline)
                written.append(path)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign pairwise``; returns the exit status."""
    started = time.perf_counter()
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.io.pairs import read_distinct_pairs
    from gpualign_plugin.io.sam import check_query_names, check_target_names
    from gpualign_plugin.pairwise.api import align_records
    from gpualign_plugin.runtime.backend import resolve_backend

    scheme = scheme_from_args(args, (args.query, args.target))
    evalue = parse_evalue(args.evalue)
    if math.isnan(args.zdrop) or args.zdrop <= 0:
        raise InputError(f"--zdrop must be a positive number of bits or inf, got {args.zdrop}")
    outputs = output_formats(args.out, args.format, FORMATS)
    for path, _ in outputs:
        check_writable(path)
    queries = read_fasta(args.query, scheme)
    targets = read_fasta(args.target, scheme)
    if any(fmt in ("sam", "bam") for _, fmt in outputs):
        check_query_names((q.id for q in queries), args.query)
        check_target_names((t.id for t in targets), args.target)
    strands = args.strand or ("both" if scheme.is_dna else "plus")
    pairs = read_distinct_pairs(args.pairs, queries, targets) if args.pairs else None
    min_score = args.min_score if args.min_score is not None else (1 if args.mode == "local" else None)
    devices = args.devices or [args.device]
    engine = resolve_backend(args.backend, devices[0])
    if engine == "gpu":
        _check_devices(devices[1:])
    args.device = devices[0]
    threads = apply_threads(args.threads)
    described = devices if engine == "gpu" else devices[:1]
    stats = RunStats("pairwise", engine=engine, device=" + ".join(describe_device(engine, d) for d in described),
                     threads=threads)
    n_strands = 2 if strands == "both" else 1
    if pairs is None:
        listed = [(q, t) for q in queries for t in targets]
    else:
        query_by_id, target_by_id = {q.id: q for q in queries}, {t.id: t for t in targets}
        listed = [(query_by_id[q], target_by_id[t]) for q, t in pairs]
    listed_queries = {q.id for q, _ in listed}  # with --pairs, the queries it names
    total = sum(len(q) * len(t) for q, t in listed) * n_strands
    unmapped = []
    phases = {"read_s": time.perf_counter() - started}
    gpu_profile = {} if engine == "gpu" else None
    bar_total = expected_cells(listed, n_strands, args.mode, engine, total, scheme, args.device, args.gpu_memory)
    with Progress(bar_total, "pairwise", estimated=args.mode == "local") as progress:
        if args.mode == "local":
            alignments, unmapped, cells = _place(queries, targets, pairs, scheme, engine, evalue, strands,
                                                 threads, args, min_score, progress.advance, gpu_profile)
        else:
            # Both engines report cells inside each pair (score pass, traceback passes).
            alignments = align_records(queries, targets, scheme, args.mode, strands, min_score, engine,
                                       args.device, pairs, threads, on_cells=progress.advance,
                                       gpu_memory=args.gpu_memory, gpu_profile=gpu_profile,
                                       devices=args.devices)
            if not args.secondary:
                alignments = [a for a in alignments if a.is_primary]
            # A query with nothing above --min-score is an unmapped record, as in local mode.
            aligned = {a.query_id for a in alignments}
            unmapped = [q for q in queries if q.id in listed_queries and q.id not in aligned]
            cells = total
    phases["align_s"] = time.perf_counter() - started - phases["read_s"]
    stats.cells = cells
    stats.finish()
    log.info("%s of %s (%s, %.2f GCUPS)", counted(len(alignments), "alignment"),
             counted(len(listed_queries), "query", "queries"), engine, stats.gcups)
    write_outputs(outputs, alignments, queries, targets, scheme, command_line(args), unmapped)
    phases["write_s"] = time.perf_counter() - started - phases["align_s"] - phases["read_s"]
    stats.extra = {"phases": end_phases(phases, started),
                   **({"gpu_phases": gpu_profile} if gpu_profile is not None else {})}
    stats.write(args.stats)
    return 0


def _check_devices(devices: list[int]) -> None:
    """:class:`BackendUnavailable` naming the first of ``devices`` that is not a usable GPU."""
    from gpualign_plugin.errors import BackendUnavailable
    from gpualign_plugin.runtime.gpu import probe

    for device in devices:
        status = probe(device)
        if not status.usable:
            raise BackendUnavailable(f"--devices: device {device}: {status.reason}")


def expected_cells(listed, n_strands: int, mode: str, engine: str, answer_cells: int, scheme, device: int,
               gpu_memory: int | None) -> int:
    """Cells a progress bar of these pairs expects (``listed``: (query, target) records). Both
    engines report cells inside each pair: every pass the engine's ``align_cells`` counts per
    pair and strand (local mode: the score passes, ``answer_cells``, plus one alignment per
    query on its longest target). An estimate where paths end early or placement finds several
    pieces (each re-scored and aligned: an estimated :class:`Progress` raises its total then)."""
    if engine == "cpu":
        from gpualign_plugin.pairwise.cpu import align_cells

        def cells(m: int, n: int) -> int:
            return align_cells(m, n)
    else:
        from gpualign_plugin.pairwise import gpu

        @functools.lru_cache(maxsize=None)
        def cells(m: int, n: int) -> int:
            return gpu.align_cells(m, n, scheme, mode, device, gpu_memory)
    if mode != "local":
        return sum(cells(len(q), len(t)) for q, t in listed) * n_strands
    longest: dict[str, tuple] = {}
    for q, t in listed:
        longest[q.id] = max(longest.get(q.id, (q, 0)), (q, len(t)), key=lambda x: x[1])
    return answer_cells + sum(cells(len(q), n) for q, n in longest.values())


def _place(queries, targets, pairs, scheme, engine, evalue, strands, threads, args, min_score, advance,
           gpu_profile=None):
    """Local placement of every query (on its listed targets with ``--pairs``).

    Returns the alignments, the queries left unmapped and the DP cells of the score passes. The
    bar advances with every pass as it is computed (inside a long query too).
    """
    from gpualign_plugin.pairwise.api import place_local

    cells = [0]

    def count(n: int) -> None:
        cells[0] += n

    options = dict(backend=engine, evalue=evalue, strands=strands, threads=threads, device=args.device,
                   zdrop_bits=args.zdrop, min_score=min_score, on_cells=count, gpu_memory=args.gpu_memory,
                   gpu_profile=gpu_profile, on_progress=advance, devices=args.devices,
                   count_low_complexity=args.count_low_complexity)
    if pairs is None:
        alignments = place_local(queries, targets, scheme, **options)
        asked = queries
    else:
        listed: dict[str, list] = {}
        for query_id, target_id in pairs:
            listed.setdefault(query_id, []).append(target_id)
        alignments, asked = [], []
        for query in queries:
            if query.id in listed:
                asked.append(query)
                mine = [t for t in targets if t.id in set(listed[query.id])]
                alignments += place_local([query], mine, scheme, **options)
    placed = {a.query_id for a in alignments}
    return alignments, [q for q in asked if q.id not in placed], cells[0]
