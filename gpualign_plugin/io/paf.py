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
the query, as in minimap2. An N matched by an N is an ``=`` column that minimap2 leaves out of
``nmatch`` and counts in ``NM``; so do we where the writer is given the DNA targets (minimap2
also leaves every column with an ambiguous base out of ``alen``; we count every column).
"""

from __future__ import annotations

import os
from typing import IO, Iterable, Union

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import text_output
from gpualign_plugin.io.text import text_input
from gpualign_plugin.model import Alignment, unknown_matches
from gpualign_plugin.scoring import Sequence

COLUMNS = ("qname", "qlen", "qstart", "qend", "strand", "tname", "tlen", "tstart", "tend",
           "nmatch", "alen", "mapq")
"""Names :func:`read_paf` gives the twelve mandatory columns, in order (minimap2's names)."""

_INTEGER_COLUMNS = frozenset(COLUMNS) - {"qname", "strand", "tname"}


def paf_line(alignment: Alignment, target: Sequence | None = None) -> str:
    """One PAF line (without newline) for ``alignment``; layout in the module docstring.
    ``target`` (the DNA target record, a :class:`~gpualign_plugin.scoring.Sequence`) moves the
    N-against-N columns from ``nmatch`` to ``NM``; without it they stay matches."""
    a = alignment
    unknown = unknown_matches(a.cigar, target.text[a.target_start:a.target_end]) if target is not None else 0
    fields = [a.query_id, a.query_length, a.query_start, a.query_end, a.strand, a.target_id,
              a.target_length, a.target_start, a.target_end, a.matches - unknown, a.columns, a.mapq,
              f"tp:A:{'P' if a.is_primary else 'S'}", f"AS:i:{a.score}", f"NM:i:{a.edit_distance + unknown}"]
    if a.evalue is not None:
        fields += [f"ZE:f:{a.evalue:.3g}", f"ZB:f:{a.bit_score:.1f}"]
    fields.append(f"cg:Z:{a.cigar}")
    return "\t".join(str(field) for field in fields)


def write_paf(path_or_handle: Union[str, os.PathLike, IO[str]],
              alignments: Iterable[Alignment], targets: dict | None = None) -> None:
    """Write alignments as PAF, one line each, in the given order.

    Parameters
    ----------
    path_or_handle : str, PathLike or text handle
        A path is written atomically (temporary name, renamed when complete); a
        handle is written to and left open.
    alignments : iterable of Alignment
        Usually the output of :func:`~gpualign_plugin.pairwise.placement.place`.
    targets : dict, optional
        DNA target records by id (:class:`~gpualign_plugin.scoring.Sequence`): an N matched by
        an N counts in ``NM`` and not in ``nmatch``, as minimap2 counts it (:func:`paf_line`).
        Leave out for protein.
    """
    with text_output(path_or_handle) as handle:
        for alignment in alignments:
            target = targets[alignment.target_id] if targets is not None else None
            handle.write(paf_line(alignment, target) + "\n")


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
