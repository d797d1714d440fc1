"""MAF (Multiple Alignment Format, UCSC) writing and reading.

Layout (https://genome.ucsc.edu/FAQ/FAQformat.html#format5): a ``##maf version=1``
header, then one block per alignment: an ``a score=...`` line, one ``s`` line per row
(``s src start size strand srcSize text``) and a blank line. ``start`` is 0-based; on the
minus strand it counts on the reverse complement of the source, so a row's residues are
``reverse_complement(source)[start:start + size]``. In memory
(:class:`~gpualign_plugin.model.MultipleAlignment`) intervals stay on the forward strand;
the conversion happens here and nowhere else.

Biopython's MAF writer (``Bio.Align.write(..., "maf")``) gives another file (scores as
``342.000000``, no ``scoring=`` or comment lines), so the writer is this module's; the tests
read what it writes with Biopython's MAF parser.
"""

from __future__ import annotations

import os
from typing import Iterable

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import text_output
from gpualign_plugin.model import MultipleAlignment


def write_maf(path_or_handle, alignments: Iterable[MultipleAlignment],
              scoring: str = "sum-of-pairs", comments: Iterable[str] = ()) -> None:
    """Write ``alignments`` as the blocks of one MAF file.

    Parameters
    ----------
    path_or_handle : str, os.PathLike or text handle
        A path is written atomically (complete file or none); a handle is written to as is.
    alignments : iterable of MultipleAlignment
        One block each, in order.
    scoring : str
        The header's ``scoring=`` value (one word).
    comments : iterable of str
        Lines written after the header, each prefixed with ``# `` (e.g. the command line
        and the scoring scheme).
    """
    with text_output(path_or_handle) as handle:
        handle.write(f"##maf version=1 scoring={scoring}\n")
        for comment in comments:
            handle.write(f"# {comment}\n")
        handle.write("\n")
        for alignment in alignments:
            handle.write(format_block(alignment))


def format_block(alignment: MultipleAlignment) -> str:
    """One MAF block (``a`` line, ``s`` lines, blank line) with the fields in aligned columns."""
    fields = []
    for row, text in enumerate(alignment.rows):
        size = alignment.ends[row] - alignment.starts[row]
        fields.append((alignment.sources[row], str(alignment.maf_start(row)), str(size),
                       alignment.strands[row], str(alignment.source_lengths[row]), text))
    widths = [max(len(f[column]) for f in fields) for column in range(5)]
    lines = [f"a score={alignment.score}"]
    for src, start, size, strand, src_size, text in fields:
        lines.append(f"s {src:<{widths[0]}} {start:>{widths[1]}} {size:>{widths[2]}} {strand} "
                     f"{src_size:>{widths[4]}} {text}")
    return "\n".join(lines) + "\n\n"


def read_maf(path: str | os.PathLike) -> list[MultipleAlignment]:
    """Read every alignment block of a MAF file.

    Only ``a`` and ``s`` lines are interpreted (``i``, ``e``, ``q`` lines and comments
    are skipped). Each row's interval is converted to the forward strand; ``ids`` and
    ``sources`` both hold the ``src`` field.

    Raises
    ------
    InputError
        Missing header, a malformed ``a`` or ``s`` line, rows of different lengths, or a
        size that does not match the row's residues (naming the file and line).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError("no such file", path=path)
    blocks: list[MultipleAlignment] = []
    score = None
    rows: list[tuple] = []
    block_line = 0

    def finish() -> None:
        if score is None:
            return
        if not rows:
            raise InputError("alignment block without 's' lines", path=path,
                             position=block_line, position_kind="line")
        if len({len(r[5]) for r in rows}) != 1:
            raise InputError("rows of the block have different lengths", path=path,
                             position=block_line, position_kind="line")
        starts = tuple(r[4] - r[1] - r[2] if r[3] == "-" else r[1] for r in rows)
        blocks.append(MultipleAlignment(
            ids=tuple(r[0] for r in rows), sources=tuple(r[0] for r in rows),
            rows=tuple(r[5] for r in rows), score=score, starts=starts,
            ends=tuple(s + r[2] for s, r in zip(starts, rows)),
            strands=tuple(r[3] for r in rows), source_lengths=tuple(r[4] for r in rows)))

    with open(path, encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
        if not first.startswith("##maf"):
            raise InputError("not a MAF file (the first line does not start with '##maf')",
                             path=path, position=1, position_kind="line")
        for number, line in enumerate(handle, start=2):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] == "a":
                finish()
                score, rows, block_line = _parse_a(words, path, number), [], number
            elif words[0] == "s":
                if score is None:
                    raise InputError("'s' line outside an alignment block", path=path,
                                     position=number, position_kind="line")
                rows.append(_parse_s(words, path, number))
    finish()
    return blocks


def _parse_a(words: list[str], path: str, number: int):
    values = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    try:
        score = float(values.get("score", "0"))
    except ValueError:
        raise InputError(f"bad score {values['score']!r}", path=path, position=number,
                         position_kind="line") from None
    return int(score) if score.is_integer() else score


def _parse_s(words: list[str], path: str, number: int) -> tuple:
    if len(words) != 7:
        raise InputError(f"an 's' line has 7 fields, found {len(words)}", path=path,
                         position=number, position_kind="line")
    src, start, size, strand, src_size, text = words[1:]
    try:
        start, size, src_size = int(start), int(size), int(src_size)
    except ValueError:
        raise InputError("start, size and srcSize must be integers", path=path,
                         position=number, position_kind="line") from None
    if strand not in ("+", "-"):
        raise InputError(f"strand must be '+' or '-', got {strand!r}", path=path,
                         position=number, position_kind="line")
    if start < 0 or start + size > src_size:
        raise InputError(f"interval {start}+{size} lies outside the source ({src_size})",
                         path=path, position=number, position_kind="line")
    if len(text) - text.count("-") - text.count(".") != size:
        raise InputError(f"size {size} does not match the {len(text) - text.count('-')} "
                         "residues of the row", path=path, position=number, position_kind="line")
    return src, start, size, strand, src_size, text
