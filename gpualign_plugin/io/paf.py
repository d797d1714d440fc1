"""PAF output (minimap2's Pairwise mApping Format) and a reader for it.

Each alignment is one line of minimap2's twelve tab-separated columns::

    qname qlen qstart qend strand tname tlen tstart tend nmatch alen mapq

0-based half-open coordinates on the forward strand of both sequences (as
minimap2 writes them, also for ``-``), ``nmatch`` the identical columns and
``alen`` the alignment block length (``=``, ``X``, ``I`` and ``D`` columns). Then
the tags ``tp:A:P`` (primary, and as minimap2 writes them, supplementary pieces of a
query placed elsewhere) or ``tp:A:S`` (secondary), ``AS:i`` (score), ``NM:i``
(mismatches plus gap columns), ``ZE:f`` and ``ZB:f`` (E-value and bit score, where
the alignment has them, ``%.3g`` and ``%.1f``) and last ``cg:Z`` (the CIGAR along the
target in ``=``/``X`` form, as ``minimap2 --eqx`` writes it; minimap2's default
is ``M`` form). On the minus strand the CIGAR reads the reverse complement of
the query, as in minimap2. Given the DNA records, the writers count ambiguous bases (N and the
other IUPAC codes) as minimap2 does: an ``=`` column of an ambiguous letter (N against N) is left
out of ``nmatch`` and counted in ``NM``, every column holding an ambiguous base is left out of
``alen``, and ``nn:i`` (after ``NM:i``) gives their number
(:func:`~gpualign_plugin.model.ambiguous_columns`).
"""

from __future__ import annotations

import os
from typing import IO, Iterable, Union

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import text_output
from gpualign_plugin.io.text import text_input
from gpualign_plugin.model import Alignment, ambiguous_columns
from gpualign_plugin.scoring import Sequence

COLUMNS = ("qname", "qlen", "qstart", "qend", "strand", "tname", "tlen", "tstart", "tend",
           "nmatch", "alen", "mapq")
"""Names :func:`read_paf` gives the twelve mandatory columns, in order (minimap2's names)."""

_INTEGER_COLUMNS = frozenset(COLUMNS) - {"qname", "strand", "tname"}


def paf_line(alignment: Alignment, query: Sequence | None = None, target: Sequence | None = None) -> str:
    """One PAF line (without newline) for ``alignment``; layout in the module docstring.
    ``query`` and ``target`` (the DNA records, :class:`~gpualign_plugin.scoring.Sequence`) count
    the ambiguous bases as minimap2 does (``nmatch``, ``alen``, ``NM:i``, ``nn:i``); without them
    every column counts as its CIGAR operation says."""
    a = alignment
    dna = query is not None and target is not None
    matched = ambiguous = 0
    if dna:
        query_text = query.text[a.query_start:a.query_end]
        matched, ambiguous = ambiguous_columns(a.cigar, query_text[::-1] if a.strand == "-" else query_text,
                                               target.text[a.target_start:a.target_end])
    fields = [a.query_id, a.query_length, a.query_start, a.query_end, a.strand, a.target_id,
              a.target_length, a.target_start, a.target_end, a.matches - matched, a.columns - ambiguous,
              a.mapq, f"tp:A:{'P' if a.is_primary else 'S'}", f"AS:i:{a.score}",
              f"NM:i:{a.edit_distance + matched}"]
    if dna:
        fields.append(f"nn:i:{ambiguous}")
    if a.evalue is not None:
        fields += [f"ZE:f:{a.evalue:.3g}", f"ZB:f:{a.bit_score:.1f}"]
    fields.append(f"cg:Z:{a.cigar}")
    return "\t".join(str(field) for field in fields)


def write_paf(path_or_handle: Union[str, os.PathLike, IO[str]],
              alignments: Iterable[Alignment], queries: dict | None = None,
              targets: dict | None = None) -> None:
    """Write alignments as PAF, one line each, in the given order.

    Parameters
    ----------
    path_or_handle : str, PathLike or text handle
        A path is written atomically (temporary name, renamed when complete); a
        handle is written to and left open.
    alignments : iterable of Alignment
        Usually the output of :func:`~gpualign_plugin.pairwise.placement.place`.
    queries, targets : dict, optional
        DNA query and target records by id (:class:`~gpualign_plugin.scoring.Sequence`): the
        ambiguous bases count as minimap2 counts them (:func:`paf_line`). Leave out for protein.
    """
    with text_output(path_or_handle) as handle:
        dna = queries is not None and targets is not None
        for alignment in alignments:
            records = (queries[alignment.query_id], targets[alignment.target_id]) if dna else ()
            handle.write(paf_line(alignment, *records) + "\n")


def _tag_value(kind: str, value: str):
    if kind == "i":
        return int(value)
    if kind == "f":
        return float(value)
    return value


def read_paf(path: str | os.PathLike) -> list[dict]:
    """Read a PAF file into one dictionary per line.

    Returns
    -------
    list of dict
        Keys :data:`COLUMNS` (integers where PAF has numbers), then one key per
        tag, by its two-letter name, with its value (``int`` for ``:i:``,
        ``float`` for ``:f:``, ``str`` otherwise), e.g. ``row['tp'] == 'P'``,
        ``row['AS'] == 42``, ``row['cg'] == '10='``. Tag names cannot collide with
        the column names (all longer than two letters).

    Raises
    ------
    InputError
        A missing file, or a line with fewer than twelve columns, a non-integer
        where an integer belongs, a strand other than ``+`` and ``-``, or a malformed
        tag; names the file and line.
    """
    path = os.fspath(path)
    rows = []
    with text_input(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) < len(COLUMNS):
                raise InputError(f"PAF line has {len(fields)} columns, needs at least 12",
                                 path=path, position=line_number, position_kind="line")
            row: dict = {}
            for name, value in zip(COLUMNS, fields):
                if name in _INTEGER_COLUMNS:
                    try:
                        value = int(value)
                    except ValueError:
                        raise InputError(f"column {name} is not an integer: {value!r}", path=path,
                                         position=line_number, position_kind="line") from None
                row[name] = value
            if row["strand"] not in ("+", "-"):
                raise InputError(f"column strand is not '+' or '-': {row['strand']!r}", path=path,
                                 position=line_number, position_kind="line")
            for field in fields[len(COLUMNS):]:
                parts = field.split(":", 2)
                if len(parts) != 3 or len(parts[0]) != 2:
                    raise InputError(f"malformed PAF tag {field!r}", path=path,
                                     position=line_number, position_kind="line")
                try:
                    row[parts[0]] = _tag_value(parts[1], parts[2])
                except ValueError:
                    raise InputError(f"malformed PAF tag {field!r}", path=path,
                                     position=line_number, position_kind="line") from None
            rows.append(row)
    return rows
