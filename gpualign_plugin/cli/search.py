"""``gpualign search``: exact Smith-Waterman database search with top-k hits, statistics and alignments."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import time

from gpualign_plugin.cli.common import (Progress, RunStats, add_compute_options,
                                        add_scoring_options, apply_threads, command_line, counted,
                                        describe_device, end_phases, scheme_from_args)
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text_files, check_writable, is_stream

log = logging.getLogger("gpualign")

EPILOG = """examples:
  # 10 best hits per protein query, BLAST tabular + hits TSV + SAM
  gpualign search -q queries.fa -d proteins.fa --out-blast hits.m8 --out-tsv hits.tsv --out-sam hits.sam
  # the score pass on the second GPU (fails with status 2 if it is not usable)
  gpualign search -q queries.fa -d proteins.fa --backend gpu --device 1 --out-blast hits.m8
  # prepare the database once, then split it over two GPUs in one process
  gpualign makedb --db proteins.fa --out proteins.gadb
  gpualign search -q queries.fa -d proteins.gadb --backend gpu --devices 0,1 --out-blast hits.m8
  # DNA, both strands, 5 hits per query
  gpualign search -q reads.fa -d genomes.fa --match 2 --mismatch -3 --top 5 --out-blast hits.m8
  # scatter a database over 4 jobs, then merge (same output as one job)
  for i in 0 1 2 3; do gpualign search -q q.fa -d db.fa --shards 4 --shard $i --out-hits part$i.hits; done
  gpualign merge-hits part*.hits --out-blast hits.m8 --out-tsv hits.tsv --out-sam hits.sam"""


def register(subparsers) -> None:
    """Add the ``search`` subcommand."""
    parser = subparsers.add_parser(
        "search", help="exact Smith-Waterman database search (top-k hits, E-values, alignments)",
        description="Score every query against every database sequence with exact local alignment "
                    "(Smith-Waterman-Gotoh; SIMD across database sequences on the CPU; on the GPU two "
                    "sequences per thread in 16-bit DPX arithmetic, rescored in 32 bits where a score "
                    "could overflow, the database resident and the top hits chosen on the device), "
                    "keep the --top best hits "
                    "of each query (score, then database order, then + before -), align them with the "
                    "pairwise engine, and write BLAST tabular, a hits TSV with bit scores and E-values, "
                    "and SAM/BAM. The database is read once (memory-mapped when prepared by 'gpualign makedb') and scored in chunks (CPU) or device-sized parts (GPU).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--query", required=True, metavar="FASTA", help="query sequences (FASTA, .gz ok)")
    parser.add_argument("-d", "--db", required=True, metavar="DB",
                        help="database: FASTA (.gz ok) or a prepared database from 'gpualign makedb' "
                             "(told apart by content; same results)")
    add_output_options(parser)
    parser.add_argument("--out-hits", metavar="PATH",
                        help="shard interchange file for 'gpualign merge-hits' (required with --shards)")
    parser.add_argument("--top", "--max-hits", dest="top", type=int, default=10, metavar="K",
                        help="hits kept per query, each a (target, strand): on DNA with both strands a "
                             "target can take two places, where BLAST's -max_target_seqs counts "
                             "targets [10]")
    parser.add_argument("--strand", choices=("both", "plus"),
                        help="search the query's reverse complement too [both for DNA, plus for protein]")
    parser.add_argument("--chunk-residues", type=int, default=20_000_000, metavar="N",
                        help="database residues held and scored at once on the CPU (bounds memory; the "
                             "GPU cuts the database into parts that fit its memory) [20000000]")
    parser.add_argument("--shards", type=int, default=1, metavar="N",
                        help="split the database into N contiguous ranges of records [1]")
    parser.add_argument("--shard", type=int, default=0, metavar="I",
                        help="which range this job searches, 0-based (with --shards) [0]")
    parser.add_argument("--db-size", type=int, metavar="RESIDUES",
                        help="database residues N for E-values [counted from --db]")
    add_scoring_options(parser, "protein")
    add_compute_options(parser)
    parser.add_argument("--devices", metavar="LIST",
                        help="GPU backend: split the database over these CUDA devices in one process, "
                             "comma-separated (e.g. 0,1; a device may be named twice to split it into "
                             "two parts) [--device]")
    parser.set_defaults(run=run)


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--out-blast``, ``--out-tsv``, ``--out-sam`` and ``--evalue`` (shared with ``merge-hits``)."""
    parser.add_argument("--evalue", type=float, metavar="E",
                        help="report only hits with an E-value of at most E (applied to the outputs, after "
                             "the top hits are chosen by score; BLAST's -evalue chooses them by E-value, "
                             "docs/ALGORITHMS.md) [no limit]")
    parser.add_argument("--out-blast", metavar="PATH", help="BLAST tabular (-outfmt 6, 12 columns)")
    parser.add_argument("--out-tsv", metavar="PATH",
                        help="hits TSV: lengths, raw score, bit score, E-value, strand, coordinates, CIGAR")
    parser.add_argument("--out-sam", metavar="PATH",
                        help="the hits' alignments, database sequences as references (.sam, or .bam "
                             "sorted and indexed)")


def requested_outputs(args: argparse.Namespace) -> list[str]:
    """The output paths given, each checked writable and no two naming one file (``--out-hits``
    included; streams such as ``/dev/null`` may be named twice); SAM paths must end in .sam or
    .bam, or be a stream (written as SAM); --evalue > 0."""
    if args.evalue is not None and not args.evalue > 0:
        raise InputError(f"--evalue must be a positive number, got {args.evalue}")
    options = {"--out-blast": args.out_blast, "--out-tsv": args.out_tsv, "--out-sam": args.out_sam,
               "--out-hits": getattr(args, "out_hits", None)}
    owners = {}
    for option, path in options.items():
        if path and not is_stream(path):
            other = owners.setdefault(os.path.realpath(path), option)
            if other != option:
                raise InputError(f"{other} and {option} name the same file", path=path)
    paths = [p for p in (args.out_blast, args.out_tsv, args.out_sam) if p]
    if (args.out_sam and not is_stream(args.out_sam)
            and os.path.splitext(args.out_sam)[1].lower() not in (".sam", ".bam")):
        raise InputError("--out-sam must end in .sam or .bam", path=args.out_sam)
    for path in paths:
        check_writable(path)
    return paths


def parse_devices(text: str | None, device: int) -> list[int]:
    """The ``--devices`` list (``'0,1'``), or ``[device]`` when not given."""
    if text is None:
        return [device]
    try:
        devices = [int(word) for word in text.split(",")]
    except ValueError:
        devices = []
    if not devices or min(devices) < 0:
        raise InputError(f"--devices must be comma-separated device ordinals such as 0,1; got {text!r}")
    return devices


def shard_range(records: int, shards: int, shard: int) -> tuple[int, int]:
    """Record indices ``[start, stop)`` of shard ``shard`` of ``shards`` contiguous ranges."""
    if shards < 1:
        raise InputError(f"--shards must be 1 or more, got {shards}")
    if not 0 <= shard < shards:
        raise InputError(f"--shard must be in 0..{shards - 1}, got {shard}")
    return records * shard // shards, records * (shard + 1) // shards


def significant(result, evalue: float | None):
    """``result`` (finished) without the hits whose E-value exceeds ``evalue`` (None: all kept)."""
    return dataclasses.replace(result, hits=passing(result.hits, evalue))


def passing(hits: list, evalue: float | None) -> list:
    """The finished ``hits`` whose E-value is at most ``evalue`` (None: all)."""
    return hits if evalue is None else [hit for hit in hits if hit.evalue <= evalue]


@contextlib.contextmanager
def search_outputs(args: argparse.Namespace, header, scheme, queries, names: list[str],
                   lengths: list[int], written: list):
    """Open every requested output of a search; yield a function that writes a list of hits.

    ``header`` is the search's result with its statistics set (its hits are not used);
    call the yielded function with each query's finished hits in query order: BLAST
    tabular and TSV lines go to the files at once (streamed into temporary files,
    renamed at the end), SAM/BAM records, which are sorted by coordinate, are written
    when the block ends. ``queries`` are the query records (SEQ of DNA SAM records);
    ``names`` and ``lengths`` describe every database record (the SAM header's ``@SQ``
    lines); ``written`` is the list of the enclosing
    :func:`~gpualign_plugin.io.atomic.all_or_none`.
    """
    from gpualign_plugin.io.blasttab import blast_line, hits_tsv_header, hits_tsv_line

    with atomic_text_files(written) as files:
        blast = files.open(args.out_blast) if args.out_blast else None
        tsv = files.open(args.out_tsv) if args.out_tsv else None
        if tsv is not None:
            tsv.write(hits_tsv_header(header, scheme))
        alignments = []

        def add(hits: list) -> None:
            for handle, line in ((blast, blast_line), (tsv, hits_tsv_line)):
                if handle is not None and hits:
                    handle.write("".join(line(hit) + "\n" for hit in hits))
                    handle.flush()
            if args.out_sam:
                alignments.extend(hit.alignment for hit in hits)

        yield add
        if args.out_sam:
            from gpualign_plugin.io.sam import write_alignments  # pysam: loaded only for SAM/BAM

            fmt = "bam" if args.out_sam.lower().endswith(".bam") else "sam"
            targets = [header.targets.get(k, (name, length))
                       for k, (name, length) in enumerate(zip(names, lengths))]
            write_alignments(args.out_sam, alignments, {q.id: q for q in queries}, targets, scheme,
                             command_line(args), fmt=fmt)
            written += [args.out_sam, args.out_sam + ".bai", args.out_sam + ".csi"]


def write_search_outputs(args: argparse.Namespace, result, scheme, queries, names: list[str],
                         lengths: list[int]) -> None:
    """Write the finished ``result`` to every requested output: all of them, or none on failure
    (:func:`search_outputs` with all hits at once)."""
    with all_or_none() as written, \
            search_outputs(args, result, scheme, queries, names, lengths, written) as add:
        add(result.hits)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign search``; returns the exit status."""
    started = time.perf_counter()
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.io.hits import write_hits
    from gpualign_plugin.runtime.backend import resolve_backend
    from gpualign_plugin.search.api import finish_hits, search_stream, statistics_of
    from gpualign_plugin.search.database import load_database

    scheme = scheme_from_args(args, (args.query, args.db))
    paths = requested_outputs(args)
    if args.shards > 1 and paths:
        raise InputError("a shard job (--shards > 1) writes only --out-hits; merge the shards with "
                         "'gpualign merge-hits' to get BLAST tabular, TSV and SAM")
    if args.evalue is not None and args.out_hits and not paths:
        raise InputError("--evalue cuts the BLAST tabular, TSV and SAM outputs; a .hits file keeps "
                         "every top hit: give --evalue to 'gpualign merge-hits'")
    if not paths and not args.out_hits:
        raise InputError("no output requested: give --out-blast, --out-tsv, --out-sam or --out-hits")
    if args.out_hits:
        check_writable(args.out_hits)
    if args.db_size is not None and args.db_size < 1:
        raise InputError(f"--db-size must be 1 or more, got {args.db_size}")
    devices = parse_devices(args.devices, args.device)
    engine = resolve_backend(args.backend, devices[0])
    if engine == "gpu":
        for device in sorted(set(devices[1:])):
            resolve_backend("gpu", device)
    threads = apply_threads(args.threads)
    queries = read_fasta(args.query, scheme)
    strands = args.strand or ("both" if scheme.is_dna else "plus")
    database = load_database(args.db, scheme, verify="background")
    names, lengths = database.names, database.lengths.tolist()
    if args.out_sam:  # names SAM cannot hold stop before the search, not after it
        from gpualign_plugin.io.sam import check_query_names, check_target_names

        check_query_names((q.id for q in queries), path=args.query)
        check_target_names(names, args.db)
    start, stop = shard_range(len(names), args.shards, args.shard)
    residues = args.db_size if args.db_size is not None else database.residues
    stats = RunStats("search", engine=engine, device=describe_device(engine, devices[0]), threads=threads)
    phases = stats.extra.setdefault("phases", {})
    phases["read_s"] = time.perf_counter() - started
    with Progress(sum(lengths[start:stop]), "search", unit="database residues") as progress:
        def advanced(database_residues: int, cells: int) -> None:
            progress.advance(database_residues)
            stats.cells += cells

        stream = search_stream(queries, database, scheme, residues, len(names), args.top, strands,
                               args.chunk_residues, on_progress=advanced, backend=engine,
                               device=devices[0], span=(start, stop), devices=devices)
    phases["score_s"] = time.perf_counter() - started - phases["read_s"]
    header = stream.result
    if paths:
        header = dataclasses.replace(header, parameters=statistics_of(header, scheme))
        log.info("statistics: lambda %.4g, K %.4g (%s)", header.parameters.lam,
                 header.parameters.k, header.parameters.source)
    found, reported = [], 0
    with all_or_none() as written:
        with (search_outputs(args, header, scheme, queries, names, lengths, written) if paths
              else contextlib.nullcontext()) as add:
            for _, hits in stream.by_query():
                found += hits
                if add is not None:
                    kept = passing(finish_hits(header, hits, header.parameters), args.evalue)
                    reported += len(kept)
                    add(kept)
            database.confirm()  # the checksums of a prepared database, checked during the search
            phases["align_write_s"] = time.perf_counter() - started - phases["read_s"] - phases["score_s"]
        if args.out_hits:
            write_hits(args.out_hits, dataclasses.replace(stream.result, hits=found), scheme.describe(),
                       args.shard, args.shards, queries, start, names[start:stop], lengths[start:stop])
            written.append(args.out_hits)
    stats.finish()
    log.info("%s of %s in %s (%s, %.2f GCUPS)", counted(reported if paths else len(found), "hit"),
             counted(len(queries), "query", "queries"),
             counted(stop - start, "database sequence"),
             stats.device if engine == "gpu" else f"{threads} CPU threads", stats.gcups)
    end_phases(phases, started)
    stats.write(args.stats)
    return 0
