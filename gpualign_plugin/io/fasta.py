"""FASTA reading (plain or gzip, many records) with errors that name file, record and position."""

from __future__ import annotations

import gzip
import os
from typing import Iterator

from gpualign_plugin.errors import InputError
from gpualign_plugin.scoring import ScoringScheme, Sequence


def _open_text(path: str):
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    if os.path.isdir(path):
        raise InputError("is a directory, not a FASTA file", path=path)
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="latin-1", newline=None)
    return open(path, "rt", encoding="latin-1", newline=None)


def iter_fasta_text(path: str | os.PathLike) -> Iterator[tuple[str, str, str]]:
    """Yield ``(id, description, text)`` for each record of a FASTA file, streaming.

    Raises
    ------
    InputError
        Missing or empty file, a file that is not FASTA, a record with an empty
        name or no residues, or a duplicated record id.
    """
    path = os.fspath(path)
    seen: set[str] = set()
    header: tuple[str, str] | None = None
    chunks: list[str] = []
    saw_any_line = False
    try:
        with _open_text(path) as handle:
            for line_number, line in enumerate(handle, start=1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                saw_any_line = True
                if line.startswith(">"):
                    if header is not None:
                        yield _finish(path, header, chunks)
                    words = line[1:].strip().split(None, 1)
                    if not words:
                        raise InputError("record header has no name", path=path,
                                         position=line_number, position_kind="line")
                    name = words[0]
                    if name in seen:
                        raise InputError("duplicate record name", path=path, record=name,
                                         position=line_number, position_kind="line")
                    seen.add(name)
                    header = (name, words[1] if len(words) > 1 else "")
                    chunks = []
                elif header is None:
                    if line.startswith(";"):
                        continue
                    raise InputError("not a FASTA file (the first line does not start with '>')",
                                     path=path, position=line_number, position_kind="line")
                else:
                    chunks.append("".join(line.split()))
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile, OSError) as exc:
        raise InputError(f"cannot be read: {exc}", path=path) from None
    if header is not None:
        yield _finish(path, header, chunks)
    elif not saw_any_line:
        raise InputError("file is empty", path=path)
    else:
        raise InputError("no FASTA records", path=path)


def _finish(path: str, header: tuple[str, str], chunks: list[str]) -> tuple[str, str, str]:
    text = "".join(chunks)
    if not text:
        raise InputError("record has an empty sequence", path=path, record=header[0])
    return header[0], header[1], text


def read_fasta(path: str | os.PathLike, scheme: ScoringScheme) -> list[Sequence]:
    """Read and encode every record of ``path`` with ``scheme``'s alphabet.

    Each :class:`~gpualign_plugin.scoring.Sequence` keeps the text as read
    (case kept). Errors name the file, the record and the 1-based position.
    """
    path = os.fspath(path)
    return [scheme.encode(name, text, path=path, description=description)
            for name, description, text in iter_fasta_text(path)]


def iter_fasta(path: str | os.PathLike, scheme: ScoringScheme) -> Iterator[Sequence]:
    """Stream the encoded records of ``path`` (for databases larger than memory)."""
    path = os.fspath(path)
    for name, description, text in iter_fasta_text(path):
        yield scheme.encode(name, text, path=path, description=description)


def write_fasta(handle, records, width: int = 60) -> None:
    """Write ``(id, text)`` or :class:`Sequence` records to an open text handle, ``width`` per line."""
    for record in records:
        name, text = (record.id, record.text) if isinstance(record, Sequence) else record
        handle.write(f">{name}\n")
        for start in range(0, len(text), width):
            handle.write(text[start:start + width] + "\n")
