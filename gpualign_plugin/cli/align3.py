"""``gpualign align3``: optimal sum-of-pairs alignment of three sequences, to MAF, FASTA and Clustal."""

from __future__ import annotations

import argparse
import logging
import os
import resource

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, command_line, counted,
                                        describe_device, scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable

log = logging.getLogger("gpualign")

EPILOG = """examples:
  # three DNA records in one file
  gpualign align3 --fasta trio.fa --maf trio.maf --clustal trio.aln
  # one record per genome file, MAF src names genome.record
  gpualign align3 --fasta human=hs.fa mouse=mm.fa dog=cf.fa --maf trio.maf --fasta-out trio.afa
  # many triplets (tab-separated: three record ids and an optional name a line) into one MAF
  gpualign align3 --fasta hs=hs.fa mm=mm.fa cf=cf.fa --triplets triplets.tsv --maf all.maf --fasta-dir afa/
  # proteins, on the GPU (an error if none is usable; --backend auto falls back to the CPU)
  gpualign align3 --fasta globins.fa --matrix BLOSUM62 --gap 8 --maf globins.maf --backend gpu"""


def register(subparsers) -> None:
    """Add the ``align3`` subcommand."""
    parser = subparsers.add_parser(
        "align3", help="optimal global alignment of three sequences (sum of pairs, linear gaps)",
        description="Align three sequences optimally under the sum-of-pairs score with a linear gap "
                    "cost (the exact 3-D dynamic program; memory bounded by checkpointing), from one "
                    "FASTA file holding three records, three FASTA files holding one each, or many "
                    "triplets listed with --triplets; write MAF, aligned FASTA and Clustal-style text.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fasta", required=True, nargs="+", metavar="[GENOME=]FASTA",
                        help="input FASTA files (.gz ok); GENOME= names the genome, and MAF src "
                             "fields become GENOME.RECORD")
    parser.add_argument("--triplets", metavar="TSV",
                        help="align these triplets: three record ids a line, tab-separated, an "
                             "optional fourth column naming the triplet; ids are looked up in every "
                             "--fasta file (GENOME.RECORD picks one genome)")
    parser.add_argument("--maf", required=True, metavar="PATH", help="MAF output (all triplets)")
    parser.add_argument("--fasta-out", metavar="PATH", help="aligned FASTA (one triplet only)")
    parser.add_argument("--clustal", metavar="PATH", help="Clustal-style text (one triplet only)")
    parser.add_argument("--fasta-dir", metavar="DIR",
                        help="with --triplets: write DIR/NAME.fasta, aligned FASTA per triplet")
    parser.add_argument("--clustal-dir", metavar="DIR",
                        help="with --triplets: write DIR/NAME.aln, Clustal-style text per triplet")
    parser.add_argument("--gap", type=int, metavar="G",
                        help="linear gap cost per residue against a gap [round(11/18*OPEN + EXTEND) "
                             "from the affine options: 8 for BLOSUM62, 5 for DNA]")
    parser.add_argument("--memory-budget", type=int, default=1024, metavar="MIB",
                        help="host memory for the traceback of one triplet, MiB [1024]; with "
                             "the GPU, also one slab of direction bytes on the device")
    add_scoring_options(parser, "dna")
    add_compute_options(parser, gpu=True)
    parser.set_defaults(run=run)


def _genome_files(specs: list[str]) -> list[tuple[str | None, str]]:
    """Split ``[GENOME=]PATH`` arguments into ``(genome or None, path)``."""
    result = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and name and "/" not in name and not os.path.exists(spec):
            result.append((name, path))
        else:
            result.append((None, spec))
    return result


def _read_inputs(specs: list[str], scheme):
    """Read every FASTA file: a list of ``(genome, path, records)``."""
    from gpualign_plugin.io.fasta import read_fasta

    return [(genome, path, read_fasta(path, scheme)) for genome, path in _genome_files(specs)]


def _region(genome, record):
    from gpualign_plugin.align3.api import Region

    return Region(record, source=f"{genome}.{record.id}" if genome else record.id)


def _single_triplet(inputs):
    """The one triplet of a run without --triplets: three records in one file or one in each of three."""
    if len(inputs) == 1 and len(inputs[0][2]) == 3:
        genome, _, records = inputs[0]
        return [("", [_region(genome, r) for r in records])]
    if len(inputs) == 3 and all(len(records) == 1 for _, _, records in inputs):
        return [("", [_region(genome, records[0]) for genome, _, records in inputs])]
    counts = ", ".join(f"{path}: {len(records)}" for _, path, records in inputs)
    raise InputError("without --triplets give one FASTA file with 3 records or three files with one "
                     f"record each (records found: {counts})")


def read_triplets(path: str, inputs) -> list[tuple[str, list]]:
    """Parse a triplets file into ``(name, [Region, Region, Region])`` per line.

    A line holds three record ids and optionally a name, tab-separated; blank lines and
    lines starting with ``#`` are skipped. An id is looked up in every input file; an id
    present in several files must be written ``GENOME.RECORD``. Names default to the
    three ids joined by ``_`` and must be unique and usable as file names.
    """
    by_id: dict[str, list] = {}
    by_qualified: dict[str, tuple] = {}
    for genome, _, records in inputs:
        for record in records:
            by_id.setdefault(record.id, []).append((genome, record))
            if genome:
                by_qualified[f"{genome}.{record.id}"] = (genome, record)
    if not os.path.isfile(path):
        raise InputError("no such file", path=path)
    triplets: list[tuple[str, list]] = []
    names: set[str] = set()
    with open(path, encoding="utf-8-sig", errors="replace") as handle:  # a BOM is no id
        for number, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = [f.strip() for f in line.rstrip("\r\n").split("\t")]
            if len(fields) not in (3, 4) or not all(fields):
                raise InputError(f"expected three record ids and an optional name separated by tabs, "
                                 f"found {len(fields)} fields", path=path, position=number,
                                 position_kind="line")
            regions = []
            for name in fields[:3]:
                found = by_id.get(name, [])
                if len(found) > 1:
                    raise InputError(f"record {name!r} is in several FASTA files; write it as "
                                     "GENOME.RECORD", path=path, position=number, position_kind="line")
                hit = found[0] if found else by_qualified.get(name)
                if hit is None:
                    raise InputError(f"record {name!r} is in none of the FASTA files", path=path,
                                     position=number, position_kind="line")
                regions.append(_region(*hit))
            label = fields[3] if len(fields) == 4 else "_".join(fields[:3])
            if "/" in label or label in (".", ".."):
                raise InputError(f"triplet name {label!r} cannot be a file name", path=path,
                                 position=number, position_kind="line")
            if label in names:
                raise InputError(f"duplicate triplet name {label!r}", path=path, position=number,
                                 position_kind="line")
            names.add(label)
            triplets.append((label, regions))
    if not triplets:
        raise InputError("no triplets in the file", path=path)
    return triplets


def _check_outputs(args) -> None:
    if args.triplets and (args.fasta_out or args.clustal):
        raise InputError("with --triplets use --fasta-dir and --clustal-dir instead of --fasta-out "
                         "and --clustal")
    if not args.triplets and (args.fasta_dir or args.clustal_dir):
        raise InputError("--fasta-dir and --clustal-dir need --triplets")
    for path in (args.maf, args.fasta_out, args.clustal):
        if path:
            check_writable(path)
    for directory in (args.fasta_dir, args.clustal_dir):
        if directory:
            if os.path.exists(directory) and not os.path.isdir(directory):
                raise InputError("exists and is not a directory", path=directory)
            if not os.path.isdir(directory):
                check_writable(directory)  # it will be created: its parent must be writable
            elif not os.access(directory, os.W_OK):
                raise InputError("output directory is not writable", path=directory)


def write_outputs(args, alignments, scheme, gap: int) -> None:
    """Write the MAF and every requested view: all of them, or none if one fails."""
    from gpualign_plugin.io.maf import write_maf
    from gpualign_plugin.io.msa import write_aligned_fasta, write_clustal

    views = []
    if args.fasta_out:
        views.append((args.fasta_out, write_aligned_fasta, alignments[0]))
    if args.clustal:
        views.append((args.clustal, write_clustal, alignments[0]))
    for directory, writer, extension in ((args.fasta_dir, write_aligned_fasta, ".fasta"),
                                         (args.clustal_dir, write_clustal, ".aln")):
        if directory:
            os.makedirs(directory, exist_ok=True)
            views += [(os.path.join(directory, a.name + extension), writer, a) for a in alignments]
    with all_or_none() as written:
        write_maf(args.maf, alignments,
                  comments=[command_line(args), f"sum of pairs: {scheme.name}, linear gap {gap} per residue"])
        written.append(args.maf)
        for path, writer, alignment in views:
            with atomic_text(path) as handle:
                writer(handle, alignment)
            written.append(path)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign align3``; returns the exit status."""
    from gpualign_plugin.align3.api import align3, default_linear_gap
    from gpualign_plugin.runtime.backend import resolve_backend

    scheme = scheme_from_args(args, [path for _, path in _genome_files(args.fasta)])
    gap = args.gap if args.gap is not None else default_linear_gap(scheme)
    if gap < 0:
        raise InputError(f"--gap must be 0 or more (a cost), got {gap}")
    if args.memory_budget < 1:
        raise InputError(f"--memory-budget must be 1 MiB or more, got {args.memory_budget}")
    _check_outputs(args)
    inputs = _read_inputs(args.fasta, scheme)
    triplets = read_triplets(args.triplets, inputs) if args.triplets else _single_triplet(inputs)
    engine = resolve_backend(args.backend, args.device)
    threads = apply_threads(args.threads)
    stats = RunStats("align3", engine=engine, device=describe_device(engine, args.device),
                     threads=threads)
    sizes = [[len(r.sequence) for r in regions] for _, regions in triplets]
    total = sum((a + 1) * (b + 1) * (c + 1) for a, b, c in sizes)
    alignments = []
    with Progress(total, "align3") as progress:
        for name, regions in triplets:
            alignments.append(align3(*regions, scheme, gap, memory_budget=args.memory_budget << 20,
                                     name=name, progress=progress.advance, backend=engine,
                                     device=args.device))
    stats.cells = total
    stats.finish()
    stats.extra = {"triplets": len(triplets),
                   "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    log.info("%s aligned (%s, %.3f s, %.3g cells/s)", counted(len(triplets), "triplet"), engine,
             stats.seconds, total / stats.seconds if stats.seconds else 0.0)
    write_outputs(args, alignments, scheme, gap)
    stats.write(args.stats)
    return 0
