"""Aligned FASTA and Clustal-style text views of a :class:`~gpualign_plugin.model.MultipleAlignment`."""

from __future__ import annotations

from gpualign_plugin.model import MultipleAlignment


def row_names(alignment: MultipleAlignment) -> tuple:
    """The name of each row in aligned FASTA and Clustal: its record id; when two rows share an
    id (one record id in several genomes' files), every row's MAF source (``GENOME.RECORD``);
    when sources repeat too (one file given twice), the id with the row number (``ID_1``)."""
    for names in (alignment.ids, alignment.sources):
        if len(set(names)) == len(names):
            return tuple(names)
    return tuple(f"{name}_{row + 1}" for row, name in enumerate(alignment.ids))


def write_aligned_fasta(handle, alignment: MultipleAlignment, width: int = 60) -> None:
    """Write the gapped rows as FASTA records, ``width`` columns a line (Biopython's writer).

    Each header is ``>ID source=SRC start=S end=E strand=+|-`` (``ID`` from :func:`row_names`)
    with the 0-based half-open forward-strand interval; a minus-strand row reads the reverse
    complement of it.
    Letter case is kept.
    """
    from Bio.Seq import Seq
    from Bio.SeqIO.FastaIO import FastaWriter
    from Bio.SeqRecord import SeqRecord

    names = row_names(alignment)
    records = [SeqRecord(Seq(text), id=names[row],
                         description=f"{names[row]} source={alignment.sources[row]} "
                                     f"start={alignment.starts[row]} end={alignment.ends[row]} "
                                     f"strand={alignment.strands[row]}")
               for row, text in enumerate(alignment.rows)]
    FastaWriter(handle, wrap=width).write_file(records)


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
    (the name of :func:`row_names` padded to a common width, then the columns) and the
    conservation line of :func:`conservation_line`, followed by a blank line. Readers of the CLUSTAL format
    (e.g. Biopython's ``AlignIO`` ``"clustal"``) read it. Written here rather than by
    Biopython, whose Clustal writer gives another file (a fixed ``CLUSTAL X (1.81)`` header,
    names padded to 36 columns, 50 columns a line, no conservation line unless one is given).
    """
    handle.write(f"CLUSTAL multiple sequence alignment by gpualign align3 "
                 f"(sum-of-pairs score {alignment.score})\n\n\n")
    names = row_names(alignment)
    pad = max(len(name) for name in names) + 4
    marks = conservation_line(alignment)
    for start in range(0, alignment.columns, width):
        for name, text in zip(names, alignment.rows):
            handle.write(f"{name:<{pad}}{text[start:start + width]}\n")
        handle.write(" " * pad + marks[start:start + width] + "\n\n")
