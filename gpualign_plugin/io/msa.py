"""Aligned FASTA and Clustal-style text views of a :class:`~gpualign_plugin.model.MultipleAlignment`."""

from __future__ import annotations

from gpualign_plugin.model import MultipleAlignment


def write_aligned_fasta(handle, alignment: MultipleAlignment, width: int = 60) -> None:
    """Write the gapped rows as FASTA records, ``width`` columns a line.

    Each header is ``>ID source=SRC start=S end=E strand=+|-`` with the 0-based half-open
    forward-strand interval; a minus-strand row reads the reverse complement of it.
    """
    for row, text in enumerate(alignment.rows):
        handle.write(f">{alignment.ids[row]} source={alignment.sources[row]} "
                     f"start={alignment.starts[row]} end={alignment.ends[row]} "
                     f"strand={alignment.strands[row]}\n")
        for start in range(0, len(text), width):
            handle.write(text[start:start + width] + "\n")


def conservation_line(alignment: MultipleAlignment) -> str:
    """``'*'`` under each column whose residues are all identical (case ignored, no gap), else ``' '``."""
    marks = []
    for column in zip(*(row.upper() for row in alignment.rows)):
        identical = column[0] != "-" and all(letter == column[0] for letter in column)
        marks.append("*" if identical else " ")
    return "".join(marks)


def write_clustal(handle, alignment: MultipleAlignment, width: int = 60) -> None:
    """Write a Clustal-style view: ids, ``width`` columns a line, and a conservation line.

    The header names the program and the score; each block holds one line per row
    (the id padded to a common width, then the columns) and the conservation line of
    :func:`conservation_line`, followed by a blank line. Readers of the CLUSTAL format
    (e.g. Biopython's ``AlignIO`` ``"clustal"``) read it.
    """
    handle.write(f"CLUSTAL multiple sequence alignment by gpualign align3 "
                 f"(sum-of-pairs score {alignment.score})\n\n\n")
    pad = max(len(name) for name in alignment.ids) + 4
    marks = conservation_line(alignment)
    for start in range(0, alignment.columns, width):
        for name, text in zip(alignment.ids, alignment.rows):
            handle.write(f"{name:<{pad}}{text[start:start + width]}\n")
        handle.write(" " * pad + marks[start:start + width] + "\n\n")
