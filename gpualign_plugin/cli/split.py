"""``gpualign split``: cut a FASTA file by record, or a list file by line, into ordered parts.

Parts are contiguous runs of the input in input order, balanced by residues (FASTA) or
lines, so concatenating the per-part results in part order gives the results of the
whole input: splitting never changes an answer. No part is empty: fewer units than
``--parts`` give fewer parts.
"""

from __future__ import annotations

import argparse
import logging
import os

import numpy as np

from gpualign_plugin.cli.common import counted
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import all_or_none, atomic_text
from gpualign_plugin.io.fasta import iter_fasta_text, write_fasta
from gpualign_plugin.io.text import text_input
from gpualign_plugin.scoring import PROTEIN, named_character

log = logging.getLogger("gpualign")

EPILOG = """examples:
  # a genome by record into at most 4 parts of similar total length: parts/000.fa ...
  gpualign split --fasta strain.fa --parts 4 --out-dir parts
  # a triplet list (three record ids a line) into at most 3 batches: batches/000.tsv ...
  gpualign split --lines triplets.tsv --parts 3 --out-dir batches"""


def partition_contiguous(weights, parts: int) -> list[tuple[int, int]]:
    """Cut a sequence of weights into at most ``parts`` contiguous, non-empty, balanced runs.

    Parameters
    ----------
    weights : sequence of int
        Weight of each unit in order (residues of a record, 1 for a line); all >= 1.
    parts : int
        Largest number of runs wanted (>= 1).

    Returns
    -------
    list of (int, int)
        Half-open index ranges ``[start, end)`` covering ``range(len(weights))`` in
        order. A run closes once its cumulative weight reaches the next multiple of
        ``total / parts``, so the cut is deterministic and depends only on the weights.
    """
    if parts < 1:
        raise InputError(f"--parts must be 1 or more, got {parts}")
    count = len(weights)
    parts = min(parts, count)
    total = sum(weights)
    ranges = []
    start = 0
    cumulative = 0
    for index, weight in enumerate(weights):
        cumulative += weight
        closed = len(ranges)
        units_left = count - index - 1
        parts_left = parts - closed - 1
        if parts_left == 0:
            continue
        if cumulative * parts >= total * (closed + 1) or units_left == parts_left:
            ranges.append((start, index + 1))
            start = index + 1
    ranges.append((start, count))
    return ranges


def register(subparsers) -> None:
    """Add the ``split`` subcommand."""
    parser = subparsers.add_parser(
        "split", help="split a FASTA file by record, or a list file by line, into parts",
        description="Split a FASTA file by record (balanced by residues) or a text file by line "
                    "into at most --parts contiguous, non-empty parts, named 000, 001, ... in "
                    "input order.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--fasta", metavar="FASTA", help="split this FASTA file by record")
    source.add_argument("--lines", metavar="FILE",
                        help="split this text file by non-empty line (e.g. a triplet list)")
    parser.add_argument("--parts", type=int, required=True, metavar="N",
                        help="largest number of parts")
    parser.add_argument("--out-dir", required=True, metavar="DIR",
                        help="directory to create the parts in (created if missing); parts left "
                             "there by an earlier split into more parts are removed")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Split the input and write the parts."""
    if args.parts < 1:
        raise InputError(f"--parts must be 1 or more, got {args.parts}")
    if args.fasta:
        units = [(f"{name} {description}".rstrip(), text)
                 for name, description, text in iter_fasta_text(args.fasta)]
        for name, text in units:  # parts the next step reads: no character of no alphabet
            codes = PROTEIN.lookup(np.frombuffer(text.encode("latin-1", "replace"), dtype=np.uint8))
            outside = np.flatnonzero(codes == 255)  # the protein letters hold the DNA ones
            if outside.size:
                raise InputError(f"{named_character(text[outside[0]])} is no DNA or protein letter",
                                 path=args.fasta, record=name.split()[0], position=int(outside[0]) + 1)
        weights = [len(text) for _, text in units]
        extension = "fa"
    else:
        with text_input(args.lines) as handle:
            units = [line.rstrip("\n") for line in handle if line.strip()]
        if not units:
            raise InputError("file has no lines", path=args.lines)
        weights = [1] * len(units)
        extension = "tsv"
    try:
        os.makedirs(args.out_dir, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output directory: {exc.strerror}",
                         path=args.out_dir) from None
    with all_or_none() as written:
        for part, (start, end) in enumerate(partition_contiguous(weights, args.parts)):
            path = os.path.join(args.out_dir, _part_name(part, extension))
            with atomic_text(path) as handle:
                if args.fasta:
                    write_fasta(handle, units[start:end])
                else:
                    handle.writelines(line + "\n" for line in units[start:end])
            written.append(path)
    _remove_stale_parts(args.out_dir, extension, len(written))
    what = (f"{counted(len(units), 'record')} ({counted(sum(weights), 'residue')})" if args.fasta
            else counted(len(units), "line"))
    log.info("%s in %s in %s", what, counted(len(written), "part"), args.out_dir)
    return 0


def _remove_stale_parts(out_dir: str, extension: str, count: int) -> None:
    """Delete ``NNN.extension`` parts numbered ``count`` or more, left by an earlier, larger split.

    Without this, a directory reused for fewer parts would still hold the old tail parts,
    and whatever reads "every part in the directory" would read them too.
    """
    for name in os.listdir(out_dir):
        number, dot, suffix = name.partition(".")
        if (dot and suffix == extension and number.isdigit() and int(number) >= count
                and name == _part_name(int(number), extension)):
            os.remove(os.path.join(out_dir, name))


def _part_name(part: int, extension: str) -> str:
    """File name of part ``part`` (0-based): ``000.fa``, ``001.fa``, ..."""
    return f"{part:03d}.{extension}"
