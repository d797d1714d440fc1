"""Search databases in memory, and the prepared on-disk form ``gpualign makedb`` writes (``.gadb``).

A :class:`Database` holds every record of a database file as flat arrays: the
residue codes of all records back to back (``uint8``, the scheme's alphabet),
the text as read (case kept, for the SAM ``MD`` tag and other outputs), record
boundaries, names and descriptions, and the record order by length. The score
passes read the codes straight from it, without one Python object per record.

**Prepared form.** A ``.gadb`` is a directory written once by
``gpualign makedb``::

    header.json      format name, format version, alphabet, counts, and for each
                     array file its size in bytes and CRC-32
    codes.npy        uint8, all residue codes back to back
    text.npy         uint8, the residues as read (latin-1 bytes, case kept)
    offsets.npy      int64, n + 1 record boundaries into codes and text
    lengths.npy      int64, n record lengths
    order.npy        int64, record indices sorted by length (stable)
    names.npy        uint8, the record names joined by newlines
    descriptions.npy uint8, the rest of each header line, joined by newlines

Opening one memory-maps the arrays (no parsing); the sizes and checksums are
checked first, so a truncated, corrupted or foreign-version file is an
:class:`~gpualign_plugin.errors.InputError` naming the file, never a wrong answer.
``gpualign search --db`` takes a ``.gadb`` or a FASTA file (told apart by their
content, :func:`load_database`) and gives byte-identical results for both.

**Reading FASTA.** :func:`read_database` parses a whole file with
:func:`gpualign_plugin.io.fasta.read_fasta_arrays` (bulk byte operations, the same
errors as the record-by-record reader).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import check_writable
from gpualign_plugin.io.fasta import FastaArrays, read_fasta_arrays
from gpualign_plugin.scoring import DNA, PROTEIN, Alphabet, ScoringScheme

FORMAT = "gpualign-db"
"""The ``format`` field of a prepared database's header.json."""
VERSION = 1
"""Format version written by this code; other versions are refused."""
ARRAYS = ("codes", "text", "offsets", "lengths", "order", "names", "descriptions")
"""The array files of a prepared database (``NAME.npy``)."""



@dataclass
class Database(FastaArrays):
    """The records of a search database as flat arrays (:class:`~gpualign_plugin.io.fasta.FastaArrays`).

    ``descriptions`` may also be, as a prepared database stores them, a ``uint8``
    array of them joined by newlines (split on first use: see :meth:`description`).
    """

    _order: np.ndarray | None = field(default=None, repr=False)
    _pending: object = field(default=None, repr=False)
    _description_ends: np.ndarray | None = field(default=None, repr=False)

    @property
    def order(self) -> np.ndarray:
        """Record indices sorted by length (stable: equal lengths keep file order)."""
        if self._order is None:
            self._order = np.argsort(self.lengths, kind="stable")
        return self._order

    def target_codes(self, index: int) -> np.ndarray:
        """The codes of record ``index`` (a view)."""
        return self.codes[self.offsets[index]:self.offsets[index + 1]]

    def description(self, index: int) -> str:
        """The header text after the name of record ``index``.

        From a prepared database's joined descriptions only that record's bytes are decoded
        (its newlines found once): a search of 400,000 records reads about 200 of them, and
        splitting all of them took 0.12 s on the way to the first written hit.
        """
        if not isinstance(self.descriptions, np.ndarray):
            return self.descriptions[index]
        if self._description_ends is None:
            blob = np.asarray(self.descriptions)
            ends = np.flatnonzero(blob == ord("\n"))
            if len(self.names) and len(ends) != len(self.names) - 1:
                self.confirm()  # a file changed since it was prepared: the checksum's error says which
                raise InputError(f"prepared database is inconsistent: descriptions.npy holds "
                                 f"{len(ends) + 1} entries for {len(self.names)} records", path=self.path)
            self._description_ends = np.append(ends, len(blob))
        start = int(self._description_ends[index - 1]) + 1 if index else 0
        return bytes(self.descriptions[start:int(self._description_ends[index])]).decode("latin-1")

    def confirm(self) -> None:
        """Wait for a checksum check started in the background (:func:`open_database`) and raise
        its :class:`InputError` if the files are damaged; nothing when no check is pending."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def check_scheme(self, scheme: ScoringScheme) -> None:
        """Raise :class:`InputError` when ``scheme``'s alphabet is not the one the codes are in."""
        if scheme.alphabet.name != self.alphabet:
            raise InputError(f"is a {self.alphabet} database but the scoring scheme is for "
                             f"{scheme.alphabet.name}", path=self.source)


def read_database(path: str | os.PathLike, alphabet: Alphabet) -> Database:
    """Read and encode every record of the FASTA file ``path`` (plain or gzip) into a :class:`Database`.

    The records are read by :func:`gpualign_plugin.io.fasta.read_fasta_arrays` (bulk byte
    operations).

    Raises
    ------
    InputError
        Exactly the error :func:`gpualign_plugin.io.fasta.read_fasta` would raise
        for the same file and a scheme of this alphabet.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError("is a directory, not a FASTA file or a prepared database", path=path)
    records = read_fasta_arrays(path, alphabet)
    return Database(records.alphabet, records.codes, records.text, records.offsets, records.names,
                    records.descriptions, records.source)


def is_prepared(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a prepared database (a directory with a ``header.json``)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "header.json"))


def load_database(path: str | os.PathLike, scheme: ScoringScheme, verify: bool | str = True) -> Database:
    """A prepared database (:func:`open_database`, checked as ``verify`` says) or a FASTA file
    (:func:`read_database`), told apart by content.

    Raises
    ------
    InputError
        Unreadable, malformed, corrupted or wrong-version input, or an alphabet
        other than ``scheme``'s.
    """
    path = os.fspath(path)
    database = (open_database(path, verify) if is_prepared(path)
                else read_database(path, scheme.alphabet))
    database.check_scheme(scheme)
    return database


def _blob(strings: list) -> np.ndarray:
    return np.frombuffer("\n".join(strings).encode("latin-1"), dtype=np.uint8)


def _unblob(array: np.ndarray, count: int) -> list:
    strings = bytes(array).decode("latin-1").split("\n") if count else []
    if len(strings) != count:
        raise ValueError(f"{len(strings)} entries for {count} records")
    return strings


def _crc(path: str) -> int:
    crc = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 24):
            crc = zlib.crc32(block, crc)
    return crc


def write_database(database: Database, path: str | os.PathLike) -> None:
    """Write ``database`` as a prepared database directory ``path``, atomically.

    The directory is built under a temporary name beside ``path`` and renamed
    when complete; an existing prepared database at ``path`` is replaced.

    Raises
    ------
    InputError
        ``path`` exists and is not a prepared database, or cannot be written (a missing
        parent directory is made).
    """
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not is_prepared(path):
        raise InputError("exists and is not a prepared database; not overwriting it", path=path)
    parent = os.path.dirname(path)
    # The database is built in a temporary directory beside ``path``; a missing parent is made.
    check_writable(os.path.join(parent, os.path.basename(path) + ".part"))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=parent)
    try:
        descriptions = [database.description(k) for k in range(len(database))]
        arrays = {"codes": database.codes, "text": database.text, "offsets": database.offsets,
                  "lengths": database.lengths, "order": database.order,
                  "names": _blob(database.names), "descriptions": _blob(descriptions)}
        files = {}
        for name in ARRAYS:
            file = os.path.join(tmp, name + ".npy")
            np.save(file, np.ascontiguousarray(arrays[name]))
            files[name] = {"bytes": os.path.getsize(file), "crc32": _crc(file)}
        header = {"format": FORMAT, "version": VERSION, "alphabet": database.alphabet,
                  "sequences": len(database), "residues": database.residues,
                  "source": os.path.basename(database.source), "files": files}
        with open(os.path.join(tmp, "header.json"), "w", encoding="utf-8") as handle:
            json.dump(header, handle, indent=1)
            handle.write("\n")
        os.chmod(tmp, 0o777 & ~_umask())
        if os.path.exists(path):
            old = tmp + ".old"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def open_database(path: str | os.PathLike, verify: bool | str = True) -> Database:
    """Open the prepared database directory ``path``, its arrays memory-mapped.

    Sizes, format, version, array shapes and the range of the residue codes are
    always checked (so damaged files cannot make an engine read out of bounds).
    ``verify`` also checks every array file's CRC-32 (reads each once): ``True``
    before returning, ``'background'`` in a thread while the caller goes on (the
    caller must call :meth:`Database.confirm` before it writes any result),
    ``False`` not at all.

    Raises
    ------
    InputError
        Missing or malformed header, another format or version, a missing,
        truncated or corrupted array file, or arrays that do not fit together.
    """
    path = os.fspath(path)
    try:
        with open(os.path.join(path, "header.json"), encoding="utf-8") as handle:
            header = json.load(handle)
        fmt, version = header["format"], header["version"]
        alphabet, files = header["alphabet"], header["files"]
        count, residues = int(header["sequences"]), int(header["residues"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a prepared database: header.json missing or malformed ({exc})",
                         path=path) from None
    if fmt != FORMAT:
        raise InputError(f"not a prepared database (format {fmt!r}, expected {FORMAT!r})", path=path)
    if version != VERSION:
        raise InputError(f"prepared database format version {version}; this gpualign reads version "
                         f"{VERSION} (run 'gpualign makedb' again)", path=path)
    if alphabet not in (DNA.name, PROTEIN.name):
        raise InputError(f"prepared database of unknown alphabet {alphabet!r}", path=path)
    arrays = {}
    for name in ARRAYS:
        file = os.path.join(path, name + ".npy")
        try:
            expected = files[name]
            size = os.path.getsize(file)
            if size != expected["bytes"]:
                raise InputError(f"{name}.npy has {size} bytes, the header says {expected['bytes']} "
                                 "(truncated or replaced)", path=path)
            if verify is True:
                _check_crc(path, name, expected["crc32"])
            arrays[name] = np.load(file, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{name}.npy cannot be read ({exc})", path=path) from None
    try:
        offsets = np.asarray(arrays["offsets"], dtype=np.int64)
        names = _unblob(arrays["names"], count)
        if (len(offsets) != count + 1 or offsets[0] != 0 or offsets[-1] != residues
                or arrays["codes"].shape != (residues,) or arrays["text"].shape != (residues,)
                or arrays["order"].shape != (count,) or (np.diff(offsets) < 1).any()):
            raise ValueError("array sizes disagree with the header")
        if residues and int(arrays["codes"].max()) >= (DNA if alphabet == DNA.name else PROTEIN).size:
            raise ValueError("residue codes outside the alphabet")
    except ValueError as exc:
        raise InputError(f"prepared database is inconsistent: {exc}", path=path) from None
    database = Database(alphabet, arrays["codes"], arrays["text"], offsets, names,
                        np.asarray(arrays["descriptions"]), path, np.asarray(arrays["order"]))
    if verify == "background":
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=1)
        database._pending = pool.submit(
            lambda: [_check_crc(path, name, files[name]["crc32"]) for name in ARRAYS])
        pool.shutdown(wait=False)
    return database


def _check_crc(path: str, name: str, crc32: int) -> None:
    if _crc(os.path.join(path, name + ".npy")) != crc32:
        raise InputError(f"{name}.npy is corrupted (CRC-32 differs from the header's)", path=path)

