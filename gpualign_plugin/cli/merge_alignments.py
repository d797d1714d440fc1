"""``gpualign merge-alignments``: merge per-shard alignment files into one of each kind.

Shards come from ``gpualign split``, which keeps input order, so merging is exact:

* BAM: a k-way merge of coordinate-sorted shards into one sorted, indexed BAM
  (:func:`gpualign_plugin.io.sam.merge_bams`);
* PAF: the shards' lines concatenated in shard order (the order of the unsplit run);
* MAF: one ``##maf`` header, then every shard's blocks in shard order;
* aligned-FASTA directories: every file copied into one directory (a name found in
  two shards is an error; hidden files are skipped).

Every output appears only when complete, and only if every merge succeeds.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import tempfile

from gpualign_plugin.cli.common import command_line, counted
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable
from gpualign_plugin.io.text import text_input

log = logging.getLogger("gpualign")

EPILOG = """examples:
  gpualign merge-alignments --bam shards/*.bam --out-bam strain.bam \\
      --paf shards/*.paf --out-paf strain.paf
  gpualign merge-alignments --maf parts/*.maf --out-maf all.maf \\
      --fasta-dir parts/*.fasta --out-fasta-dir fasta
Give the shard files in shard order (000, 001, ...): PAF and MAF keep that order."""

_PAIRS = (("bam", "out_bam"), ("paf", "out_paf"), ("maf", "out_maf"), ("fasta_dir", "out_fasta_dir"))


def register(subparsers) -> None:
    """Add the ``merge-alignments`` subcommand."""
    parser = subparsers.add_parser(
        "merge-alignments", help="merge per-shard BAM/PAF/MAF/FASTA outputs",
        description="Merge the per-shard outputs of a split run: sorted BAMs into one sorted, "
                    "indexed BAM; PAF and MAF files concatenated in shard order; directories "
                    "of aligned FASTA files into one directory.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bam", nargs="+", default=[], metavar="BAM",
                        help="coordinate-sorted shard BAMs")
    parser.add_argument("--out-bam", metavar="BAM", help="merged BAM (indexed beside it)")
    parser.add_argument("--paf", nargs="+", default=[], metavar="PAF", help="shard PAF files")
    parser.add_argument("--out-paf", metavar="PAF", help="merged PAF")
    parser.add_argument("--maf", nargs="+", default=[], metavar="MAF", help="shard MAF files")
    parser.add_argument("--out-maf", metavar="MAF", help="merged MAF")
    parser.add_argument("--fasta-dir", nargs="+", default=[], metavar="DIR",
                        help="shard directories of aligned FASTA files")
    parser.add_argument("--out-fasta-dir", metavar="DIR",
                        help="directory to create with every aligned FASTA file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check every input and output first, then merge each kind that was given."""
    given = False
    for inputs_name, output_name in _PAIRS:
        inputs, output = getattr(args, inputs_name), getattr(args, output_name)
        option = "--" + inputs_name.replace("_", "-")
        if bool(inputs) != bool(output):
            raise InputError(f"{option} and --{output_name.replace('_', '-')} go together")
        if not inputs:
            continue
        given = True
        for path in inputs:
            exists = os.path.isdir(path) if inputs_name == "fasta_dir" else os.path.isfile(path)
            if not exists:
                raise InputError("no such " + ("directory" if inputs_name == "fasta_dir" else "file"),
                                 path=path)
        if inputs_name == "fasta_dir":
            check_writable(output.rstrip("/") + "/")
            if os.path.exists(output):
                raise InputError("output directory exists already", path=output)
        else:
            check_writable(output)
    if not given:
        raise InputError("nothing to merge: give --bam, --paf, --maf or --fasta-dir inputs")
    with all_or_none() as written:
        if args.bam:
            from gpualign_plugin.io.sam import merge_bams

            merge_bams(args.out_bam, args.bam, command_line=command_line(args))
            written += [args.out_bam, args.out_bam + ".bai", args.out_bam + ".csi"]
        if args.paf:
            merge_paf(args.paf, args.out_paf)
            written.append(args.out_paf)
        if args.maf:
            merge_maf(args.maf, args.out_maf)
            written.append(args.out_maf)
        if args.fasta_dir:
            # Last: the directory appears only when complete, so it needs no clean-up.
            merge_directories(args.fasta_dir, args.out_fasta_dir)
    for inputs_name, output_name in _PAIRS:
        inputs = getattr(args, inputs_name)
        if inputs:
            noun = (("FASTA directory", "FASTA directories") if inputs_name == "fasta_dir"
                    else (f"{inputs_name.upper()} file",))
            log.info("%s merged into %s", counted(len(inputs), *noun), getattr(args, output_name))
    return 0


PAF_NUMBERS = (1, 2, 3, 6, 7, 8, 9, 10, 11)
"""0-based PAF columns that hold integers (lengths, coordinates, matches, block length, MAPQ)."""


def merge_paf(inputs, output) -> None:
    """Write the lines of the PAF files ``inputs`` one file after another to ``output`` (atomically).

    Raises
    ------
    InputError
        A line with fewer than 12 columns, a strand other than ``+``/``-``, a number column that
        is none, or a last line without its line end (a shard cut short); names file and line.
    """
    with atomic_text(output) as out:
        for path in inputs:
            with text_input(path) as handle:
                for number, line in enumerate(handle, start=1):
                    fields = line.rstrip("\n").split("\t")
                    if not line.endswith("\n"):
                        problem = "the last line has no line end (a file cut short?)"
                    elif len(fields) < 12:
                        problem = f"{len(fields)} tab-separated columns, PAF has at least 12"
                    elif fields[4] not in ("+", "-") or not all(fields[k].isdigit() for k in PAF_NUMBERS):
                        problem = "not a PAF line (strand, coordinates or counts malformed)"
                    else:
                        out.write(line)
                        continue
                    raise InputError(problem, path=path, position=number, position_kind="line")


def merge_maf(inputs, output) -> None:
    """Write one MAF with the first input's header lines and every input's blocks in order.

    Raises
    ------
    InputError
        An input that does not start with a ``##maf`` line, or a line without its line end or a
        malformed ``s`` line (names file and line).
    """
    with atomic_text(output) as out:
        for index, path in enumerate(inputs):
            with text_input(path) as handle:
                first = handle.readline()
                if not first.startswith("##maf"):
                    raise InputError("not a MAF file (the first line is not '##maf ...')",
                                     path=path, position=1, position_kind="line")
                if index == 0:
                    out.write(first)
                in_header = True
                for number, line in enumerate(handle, start=2):
                    if in_header and line.startswith("#"):
                        if index == 0:
                            out.write(line)
                        continue
                    in_header = False
                    if not line.endswith("\n") or (line.startswith("s ") and not _maf_s_line(line.split())):
                        raise InputError("a MAF line cut short or malformed (an 's' line: src, start, size, "
                                         "strand, srcSize and a text of size letters)",
                                         path=path, position=number, position_kind="line")
                    out.write(line)


def _maf_s_line(fields: list[str]) -> bool:
    """Whether the fields of a MAF ``s`` line are well formed: seven, numbers where numbers go,
    a strand, and as many letters in the text as the size says."""
    return (len(fields) == 7 and fields[2].isdigit() and fields[3].isdigit() and fields[4] in ("+", "-")
            and fields[5].isdigit() and len(fields[6]) - fields[6].count("-") == int(fields[3]))


def merge_directories(inputs, output) -> None:
    """Copy every file of the ``inputs`` directories into the new directory ``output``.

    The directory appears under its name only once every file is copied.

    Raises
    ------
    InputError
        The same file name in two input directories.
    """
    output = output.rstrip("/")
    parent = os.path.dirname(os.path.abspath(output))
    staging = tempfile.mkdtemp(prefix="." + os.path.basename(output) + ".", suffix=".part",
                               dir=parent)
    try:
        origin: dict[str, str] = {}
        for directory in inputs:
            for name in sorted(os.listdir(directory)):
                source = os.path.join(directory, name)
                # Hidden files are bookkeeping (e.g. Snakemake's .snakemake_timestamp).
                if name.startswith(".") or not os.path.isfile(source):
                    continue
                if name in origin:
                    raise InputError(f"file name also found in {origin[name]}", path=source)
                origin[name] = directory
                shutil.copyfile(source, os.path.join(staging, name))
        os.chmod(staging, 0o755)
        os.replace(staging, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging)
        raise
