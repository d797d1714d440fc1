"""Reading the line-based text inputs (PAF, hit and block tables, lists) with one-line errors."""

from __future__ import annotations

import contextlib
import os
from typing import IO, Iterator

from gpualign_plugin.errors import InputError


@contextlib.contextmanager
def text_input(path: str | os.PathLike) -> Iterator[IO[str]]:
    """Open a UTF-8 text file for reading, as ``open(path, encoding="utf-8-sig")`` does: a
    byte-order mark at the start (as Windows editors save UTF-8) is not part of the first line.

    Raises
    ------
    InputError
        The file is missing, a directory or unreadable, or bytes read inside the
        ``with`` block are not UTF-8 (a BAM or gzip file given by mistake, say);
        names the file.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError("is a directory, not a file", path=path)
    if not os.path.isfile(path):
        raise InputError("no such file", path=path)
    try:
        handle = open(path, encoding="utf-8-sig")
    except OSError as exc:  # unreadable (permissions)
        raise InputError(f"cannot be read: {exc.strerror}", path=path) from None
    try:
        with handle:
            yield handle
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=path) from None
