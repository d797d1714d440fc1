"""Human-readable pairwise alignments in the style of EMBOSS water/needle's "pair" format.

Layout::

    ########################################
    # Program: gpualign 0.1.0
    # Commandline: gpualign pairwise ...
    # Align_format: pair
    # Matrix: match=2,mismatch=-3,ambiguity=-1
    # Gap_open: 5
    # Gap_extend: 2
    # Gap_cost: a gap of k residues costs 5 + 2k
    # Alignments: 1
    ########################################

    #=======================================
    #
    # Aligned_sequences: 2
    # 1: q1
    # 2: t1
    # Mode: local
    # Strand: +
    # Length: 15
    # Identity:      11/15 (73.3%)
    # Similarity:    11/15 (73.3%)
    # Gaps:           3/15 (20.0%)
    # Score: 3
    #
    #=======================================

    q1                 3 ACGTGGACCATT-CA     16
                         ||||  ||.||| ||
    t1                 5 ACGT--ACGATTGCA     17

    #---------------------------------------

Conventions:

* Sequence 1 is the query, sequence 2 the target; residues are shown as read
  (case kept, so soft-masking is visible); on the minus strand the query row is
  the reverse complement of the query, with its case kept.
* 60 columns a line. The numbers are 1-based positions on the forward strand of
  each record (as EMBOSS): the first and the last residue of that row on the line,
  so on the minus strand the query's numbers descend. A row with no residue on a
  line shows the position of its last residue before the line twice.
* Match line: ``|`` identical residues, ``:`` different residues with a positive
  score, ``.`` different residues scoring zero or less, a space at a gap.
* Length is the number of columns; Identity counts identical columns;
  Similarity counts identical or positive-scoring columns; Gaps counts gap
  columns. Gap costs are gpualign's (a gap of k residues costs open + k*extend),
  not EMBOSS's (where a gap of k costs open + (k-1)*extend).
* No run date is written, so the same alignments always give the same file.
"""

from __future__ import annotations

import os
from typing import IO, Iterable, Union

import numpy as np

from gpualign_plugin.io.atomic import text_output
from gpualign_plugin.model import Alignment
from gpualign_plugin.scoring import ScoringScheme, Sequence, reverse_complement_text

LINE_WIDTH = 60
"""Alignment columns per line."""

_RULE_HEAD = "#" * 40
_RULE_BLOCK = "#" + "=" * 39
_RULE_END = "#" + "-" * 39


def _gapped_rows(alignment: Alignment, query: Sequence, target: Sequence):
    """The query row, target row (text with '-') and the match line of ``alignment``."""
    query_text = query.text[alignment.query_start:alignment.query_end]
    query_codes = alignment.aligned_query_codes(query.codes)
    if alignment.strand == "-":
        query_text = reverse_complement_text(query_text)
    target_text = target.text[alignment.target_start:alignment.target_end]
    target_codes = np.asarray(target.codes)[alignment.target_start:alignment.target_end]
    if alignment.cigar.query_length() != len(query_text) or \
            alignment.cigar.target_length() != len(target_text):
        raise ValueError(f"CIGAR of {alignment.query_id!r} on {alignment.target_id!r} does not span "
                         "the reported intervals")
    return query_text, query_codes, target_text, target_codes


def _columns(alignment: Alignment, query: Sequence, target: Sequence, scheme: ScoringScheme):
    """Three equal-length strings (query row, match line, target row) and the similarity count."""
    query_text, query_codes, target_text, target_codes = _gapped_rows(alignment, query, target)
    top, middle, bottom = [], [], []
    similar = 0
    qi = ti = 0
    for length, op in alignment.cigar.runs:
        if op in "=XM":
            a = query_codes[qi:qi + length]
            b = target_codes[ti:ti + length]
            scores = scheme.matrix[a, b]
            for identical, score in zip(a == b, scores):
                if identical:
                    middle.append("|")
                else:
                    middle.append(":" if score > 0 else ".")
                similar += bool(identical or score > 0)
            top.append(query_text[qi:qi + length])
            bottom.append(target_text[ti:ti + length])
            qi += length
            ti += length
        elif op == "I":
            top.append(query_text[qi:qi + length])
            middle.append(" " * length)
            bottom.append("-" * length)
            qi += length
        elif op == "D":
            top.append("-" * length)
            middle.append(" " * length)
            bottom.append(target_text[ti:ti + length])
            ti += length
        else:
            raise ValueError(f"unexpected CIGAR op {op!r} in a pairwise alignment")
    return "".join(top), "".join(middle), "".join(bottom), similar


def _fraction(label: str, count: int, total: int) -> str:
    percent = 100.0 * count / total if total else 0.0
    return f"# {label + ':':<12}{count:>6}/{total} ({percent:4.1f}%)"


def format_alignment(alignment: Alignment, query: Sequence, target: Sequence,
                     scheme: ScoringScheme) -> str:
    """The block of one alignment (summary and 60-column lines), ending with a newline.

    Parameters
    ----------
    alignment : Alignment
        The alignment to show.
    query, target : Sequence
        Its query and target records (text and codes).
    scheme : ScoringScheme
        Scores the columns for the match line and the similarity count.
    """
    top, middle, bottom, similar = _columns(alignment, query, target, scheme)
    columns = len(top)
    lines = [
        _RULE_BLOCK, "#", "# Aligned_sequences: 2", f"# 1: {alignment.query_id}",
        f"# 2: {alignment.target_id}", f"# Mode: {alignment.mode}", f"# Strand: {alignment.strand}",
        f"# Length: {columns}",
        _fraction("Identity", alignment.matches, columns),
        _fraction("Similarity", similar, columns),
        _fraction("Gaps", alignment.gap_columns, columns),
        f"# Score: {alignment.score}", "#", _RULE_BLOCK, "",
    ]
    name_width = max(13, len(alignment.query_id), len(alignment.target_id))
    number_width = max(6, len(str(max(alignment.query_length, alignment.target_length) + 1)))
    # Position of the last residue shown so far, per row, and the direction positions move.
    if alignment.strand == "-":
        query_last, query_step = alignment.query_end + 1, -1
    else:
        query_last, query_step = alignment.query_start, 1
    target_last = alignment.target_start
    for offset in range(0, columns, LINE_WIDTH):
        rows = []
        for name, row, last, step in ((alignment.query_id, top[offset:offset + LINE_WIDTH],
                                       query_last, query_step),
                                      (alignment.target_id, bottom[offset:offset + LINE_WIDTH],
                                       target_last, 1)):
            residues = len(row) - row.count("-")
            first = last + step if residues else last
            end = last + residues * step
            rows.append((f"{name:<{name_width}} {first:>{number_width}} {row} "
                         f"{end:>{number_width}}", end))
        query_last, target_last = rows[0][1], rows[1][1]
        lines.append(rows[0][0])
        lines.append(" " * (name_width + number_width + 2) + middle[offset:offset + LINE_WIDTH])
        lines.append(rows[1][0])
        lines.append("")
    return "\n".join(lines) + "\n"


def _header(scheme: ScoringScheme, command_line: str, count: int) -> str:
    from gpualign_plugin.version import __version__

    return "\n".join([
        _RULE_HEAD,
        f"# Program: gpualign {__version__}",
        f"# Commandline: {' '.join(command_line.split())}",
        "# Align_format: pair",
        f"# Matrix: {scheme.name}",
        f"# Gap_open: {scheme.gap_open}",
        f"# Gap_extend: {scheme.gap_extend}",
        f"# Gap_cost: a gap of k residues costs {scheme.gap_open} + {scheme.gap_extend}k",
        f"# Alignments: {count}",
        _RULE_HEAD, "", "",
    ])


def write_pairwise_text(path_or_handle: Union[str, os.PathLike, IO[str]],
                        alignments: Iterable[Alignment], queries: dict[str, Sequence],
                        targets: Iterable[Sequence] | dict[str, Sequence], scheme: ScoringScheme,
                        command_line: str) -> None:
    """Write alignments in the EMBOSS-like pair format described in the module docstring.

    Parameters
    ----------
    path_or_handle : str, PathLike or text handle
        A path is written atomically (temporary name, renamed when complete); a
        handle is written to and left open.
    alignments : iterable of Alignment
        Shown in the given order.
    queries : dict of str to Sequence
        Query records by id.
    targets : iterable of Sequence, or dict of str to Sequence
        Target records.
    scheme : ScoringScheme
        The scheme the alignments were computed with (header, match line).
    command_line : str
        Shown in the header.

    Raises
    ------
    KeyError
        An alignment's query or target is not among the records.
    ValueError
        A CIGAR that does not span the alignment's reported intervals.
    """
    alignments = list(alignments)
    if not isinstance(targets, dict):
        targets = {record.id: record for record in targets}
    with text_output(path_or_handle) as handle:
        handle.write(_header(scheme, command_line, len(alignments)))
        for alignment in alignments:
            handle.write(format_alignment(alignment, queries[alignment.query_id],
                                          targets[alignment.target_id], scheme))
        handle.write(_RULE_END + "\n")
