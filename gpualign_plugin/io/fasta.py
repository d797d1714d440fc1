"""FASTA reading (plain or gzip, many records) with errors that name file, record and position.

Two readers with the same rules and the same errors: record by record
(:func:`iter_fasta_text`, :func:`read_fasta`: one :class:`Sequence` per record) and in
bulk (:func:`read_fasta_arrays`: every record's codes and text in flat arrays, for
millions of short records and for search databases).
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.names import Names
from gpualign_plugin.scoring import NUCLEOTIDE_LIKE, PROTEIN, Alphabet, ScoringScheme, Sequence

_WHITESPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"
"""Bytes that ``str.split()`` treats as whitespace in latin-1 text (dropped from sequence lines)."""
_WHITESPACE_MASK = np.zeros(256, dtype=bool)
_WHITESPACE_MASK[list(_WHITESPACE)] = True
_NEWLINE_BYTE = 10


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


def header_text(line: str) -> str:
    """A header line read as latin-1 (every byte one character), as UTF-8 when its bytes are
    valid UTF-8: names such as ``prot_β`` come out as written, not as ``prot_Î²``."""
    try:
        return line.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return line


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
                    words = header_text(line[1:]).strip().split(None, 1)
                    if not words:
                        raise InputError("record header has no name", path=path,
                                         position=line_number, position_kind="line")
                    name = words[0]
                    if name in seen:
                        raise InputError("duplicate record name", path=path, record=name,
                                         position=line_number, position_kind="line")
                    seen.add(name)
                    header = (name, words[1] if len(words) > 1 else "", line_number)
                    chunks = []
                elif header is None:
                    if line.startswith(";"):
                        continue
                    raise InputError("not a FASTA file (the first line does not start with '>')",
                                     path=path, position=line_number, position_kind="line")
                else:
                    chunks.append("".join(line.split()))
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile, OSError, zlib.error) as exc:
        raise InputError(f"cannot be read: {exc}", path=path) from None
    if header is not None:
        yield _finish(path, header, chunks)
    elif not saw_any_line:
        raise InputError("file is empty", path=path)
    else:
        raise InputError("no FASTA records", path=path)


def _in_file(encode, *args, **kwargs):
    """``encode(*args, **kwargs)``; an :class:`InputError` at a sequence position gets the line
    and column of that character in the file (:func:`file_location`)."""
    try:
        return encode(*args, **kwargs)
    except InputError as error:
        if error.path is None or error.record is None or error.position is None or error.position_kind != "position":
            raise
        line, column = file_location(error.path, error.record, error.position)
        raise InputError(error.message, path=error.path, record=error.record, position=error.position,
                         file_line=line, file_column=column) from None


def file_location(path: str, record: str, position: int) -> tuple[int | None, int | None]:
    """The 1-based line and column of ``path`` that hold residue ``position`` (1-based) of
    ``record``, counting residues as :func:`iter_fasta_text` does (whitespace in sequence lines
    is no residue); ``(None, None)`` when the record or position is not there."""
    seen = 0
    inside = False
    with _open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if line.startswith(">"):
                if inside:
                    break
                words = header_text(line[1:]).strip().split(None, 1)
                inside = bool(words) and words[0] == record
                continue
            if not inside:
                continue
            residues = [k for k, char in enumerate(line) if not char.isspace()]
            if seen + len(residues) >= position:
                return line_number, residues[position - seen - 1] + 1
            seen += len(residues)
    return None, None


def _finish(path: str, header: tuple[str, str, int], chunks: list[str]) -> tuple[str, str, str]:
    text = "".join(chunks)
    if not text:
        raise InputError("record has an empty sequence", path=path, record=header[0],
                         position=header[2], position_kind="line")  # the header's line
    return header[0], header[1], text


def read_fasta(path: str | os.PathLike, scheme: ScoringScheme) -> list[Sequence]:
    """Read and encode every record of ``path`` with ``scheme``'s alphabet.

    Each :class:`~gpualign_plugin.scoring.Sequence` keeps the text as read
    (case kept). Errors name the file, the record and the 1-based position. A protein
    scheme refuses a file whose residues, all records together, look like nucleotides
    (:func:`~gpualign_plugin.scoring.looks_like_nucleotide`): a DNA file given by mistake;
    one Gly/Ala-rich protein among others is read.
    """
    path = os.fspath(path)
    records = [_in_file(scheme.encode, name, text, path=path, description=description)
               for name, description, text in iter_fasta_text(path)]
    if scheme.alphabet is PROTEIN and records:
        _refuse_nucleotide_file(np.frombuffer("".join(r.text for r in records).encode("latin-1"),
                                              dtype=np.uint8), path, records[0].id)
    return records


def iter_fasta(path: str | os.PathLike, scheme: ScoringScheme) -> Iterator[Sequence]:
    """Stream the encoded records of ``path`` (for databases larger than memory); unlike
    :func:`read_fasta`, without the whole-file check of a protein file's residues."""
    path = os.fspath(path)
    for name, description, text in iter_fasta_text(path):
        yield _in_file(scheme.encode, name, text, path=path, description=description)


def write_fasta(handle, records, width: int = 60) -> None:
    """Write ``(id, text)`` or :class:`Sequence` records to an open text handle, ``width`` per line."""
    for record in records:
        name, text = (record.id, record.text) if isinstance(record, Sequence) else record
        handle.write(f">{name}\n")
        for start in range(0, len(text), width):
            handle.write(text[start:start + width] + "\n")


@dataclass
class FastaArrays:
    """Every record of a FASTA file as flat arrays (no Python object per residue or record text).

    Attributes
    ----------
    alphabet : str
        ``'protein'`` or ``'dna'``: the alphabet ``codes`` are in.
    codes : numpy.ndarray
        ``uint8`` residue codes of all records back to back.
    text : numpy.ndarray
        ``uint8`` residues as read (latin-1 bytes, case kept), same layout as ``codes``.
    offsets : numpy.ndarray
        ``int64``, ``len(self) + 1`` boundaries: record ``i`` is ``codes[offsets[i]:offsets[i+1]]``.
    names : list of str or Names
        Record ids, in file order. The bulk reader keeps headers that are ASCII names without
        blanks as bytes (:class:`~gpualign_plugin.io.names.Names`, a sequence of ``str``).
    descriptions : list of str
        The rest of each header line, in file order.
    source : str
        The file it was read from (for messages).
    """

    alphabet: str
    codes: np.ndarray
    text: np.ndarray
    offsets: np.ndarray
    names: list | Names
    descriptions: list
    source: str = ""

    def __len__(self) -> int:
        return len(self.names)

    @property
    def lengths(self) -> np.ndarray:
        """``int64`` residues of each record."""
        return np.diff(self.offsets)

    @property
    def residues(self) -> int:
        """Residues of all records."""
        return int(self.offsets[-1])

    def description(self, index: int) -> str:
        """The header text after the name of record ``index``."""
        return self.descriptions[index]

    def record(self, index: int) -> Sequence:
        """Record ``index`` as a :class:`~gpualign_plugin.scoring.Sequence` (text as read)."""
        start, stop = int(self.offsets[index]), int(self.offsets[index + 1])
        text = bytes(self.text[start:stop]).decode("latin-1")
        return Sequence(self.names[index], text, np.asarray(self.codes[start:stop]),
                        self.description(index))


def read_fasta_arrays(path: str | os.PathLike, alphabet: Alphabet) -> FastaArrays:
    """Read and encode every record of the FASTA file ``path`` (plain or gzip) into flat arrays.

    One decompression, one split of the whole file and one table lookup for every
    residue. Its rules are those of :func:`iter_fasta_text` and
    :meth:`gpualign_plugin.scoring.ScoringScheme.encode`; whenever the bulk pass meets
    anything those would reject (or anything it does not handle itself, such as
    comment lines), the file is read again by them, so errors are word for word the same.

    Raises
    ------
    InputError
        Exactly the error :func:`read_fasta` would raise for the same file and a
        scheme of this alphabet.
    """
    path = os.fspath(path)
    records = _bulk_parse(_read_bytes(path), alphabet, path)
    return records if records is not None else _parse_by_records(path, alphabet)


def _read_bytes(path: str) -> bytes:
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    if os.path.isdir(path):
        raise InputError("is a directory, not a FASTA file", path=path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (EOFError, gzip.BadGzipFile, OSError, zlib.error) as exc:
        raise InputError(f"cannot be read: {exc}", path=path) from None
    return data


def _bulk_parse(data: bytes, alphabet: Alphabet, path: str) -> FastaArrays | None:
    """The fast path of :func:`read_fasta_arrays`; None when anything needs the record-by-record rules.

    Compiled passes over the bytes, pieces of records in parallel
    (:func:`~gpualign_plugin.io.fasta_scan.scan_records`): a
    header is a line starting with ``>``; a record's residues are the bytes of the lines
    after its header that are not whitespace.
    """
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")  # universal newlines
    body = data.lstrip(_WHITESPACE)
    skipped = len(data) - len(body)
    if not body.startswith(b">") or (skipped and data[skipped - 1] != _NEWLINE_BYTE):
        return None  # empty, comments, not FASTA or '  >r' (no header): the record reader words the error
    if not body.endswith(b"\n"):
        body += b"\n"
    from gpualign_plugin.io.fasta_scan import scan_records  # Numba: loaded when a file needs it

    raw = np.frombuffer(body, dtype=np.uint8)
    text, codes, lengths, headers, hashes, outside = scan_records(
        raw, _record_chunks(body), _WHITESPACE_MASK, alphabet.lookup(np.arange(256, dtype=np.uint8)))
    if outside:
        return None  # a residue outside the alphabet: the record reader words the error
    names, descriptions = _header_fields(headers)
    if (lengths == 0).any() or names is None or _has_repeats(names, hashes):
        return None  # an empty record or header, or a repeated name: the record reader words the error
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if alphabet is PROTEIN:
        _refuse_nucleotide_file(text, path, names[0])
    return FastaArrays(alphabet.name, codes, text, offsets, names, descriptions, path)


SCAN_CHUNK_BYTES = 1 << 22
"""Bytes of FASTA each parallel task of :func:`~gpualign_plugin.io.fasta_scan.scan_records` reads
(cut at record starts)."""


def _record_chunks(body: bytes) -> np.ndarray:
    """Start offsets of the pieces of ``body`` that
    :func:`~gpualign_plugin.io.fasta_scan.scan_records` reads in parallel, and its end.

    Each piece starts at a header line (``>`` after a newline), about
    :data:`SCAN_CHUNK_BYTES` apart.
    """
    bounds = [0]
    while True:
        found = body.find(b"\n>", bounds[-1] + SCAN_CHUNK_BYTES)
        if found < 0:
            break
        bounds.append(found + 1)
    bounds.append(len(body))
    return np.array(bounds, dtype=np.int64)


def _header_fields(headers: np.ndarray) -> tuple[Names | list | None, list]:
    """Names and descriptions of newline-ended header lines (``None`` names when one has no name).

    Headers that are ASCII without blanks are names only: those stay bytes (:class:`Names`).
    """
    if (headers < 128).all() and not _WHITESPACE_MASK[headers[headers != _NEWLINE_BYTE]].any():
        names = Names.of_lines(headers)
        if (names.lengths() == 0).any():
            return None, []
        return names, [""] * len(names)
    # not ASCII, or a blank: split as the record reader does
    lines = [header_text(line) for line in bytes(headers).decode("latin-1").split("\n")[:-1]]
    names, descriptions = [], []
    for line in lines:
        words = line.strip().split(None, 1)
        if not words:
            return None, []
        names.append(words[0])
        descriptions.append(words[1] if len(words) > 1 else "")
    return names, descriptions


def _has_repeats(names: Names | list, hashes: np.ndarray) -> bool:
    """Whether a name occurs twice; ``hashes`` are those of the header lines, which are the
    names when they are :class:`Names` (then only equal hashes need the names compared)."""
    if isinstance(names, Names):
        ordered = np.sort(hashes)
        if not (ordered[1:] == ordered[:-1]).any():
            return False
    return len(set(names)) != len(names)


def _refuse_nucleotide_file(text: np.ndarray, path: str, first: str) -> None:
    """Raise :class:`InputError` (naming ``path`` and its first record ``first``) when the
    residue bytes ``text`` of a whole protein file are what
    :func:`gpualign_plugin.scoring.looks_like_nucleotide` flags: at least 10 letters, 90% or
    more of them A, C, G, T, U or N (``*``, the only other byte here, is no letter)."""
    nucleotide = np.zeros(256, dtype=bool)
    for letter in NUCLEOTIDE_LIKE:
        nucleotide[ord(letter)] = nucleotide[ord(letter.lower())] = True
    letters = len(text) - int(np.count_nonzero(text == ord("*")))
    hits = int(np.count_nonzero(nucleotide[text]))
    if letters >= 10 and hits >= 0.9 * letters:
        raise InputError(f"the records look like nucleotides ({100.0 * hits / letters:.0f}% A, C, G, T, "
                         "U, N) but the scoring scheme is for protein (DNA needs DNA scoring: --match/--mismatch, "
                         "or makedb --alphabet dna)",
                         path=path, record=first)


def _parse_by_records(path: str, alphabet: Alphabet) -> FastaArrays:
    names, descriptions, texts, codes = [], [], [], []
    for name, description, text in iter_fasta_text(path):
        names.append(name)
        descriptions.append(description)
        texts.append(text.encode("latin-1"))
        codes.append(_in_file(alphabet.encode, text, path=path, record=name))
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    text = np.frombuffer(b"".join(texts), dtype=np.uint8)
    if alphabet is PROTEIN and names:
        _refuse_nucleotide_file(text, path, names[0])
    return FastaArrays(alphabet.name, np.concatenate(codes), text, offsets, names, descriptions, path)
