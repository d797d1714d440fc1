"""Inputs given as a pipe or a terminal (``/dev/stdin``, ``<(zcat x.fa.gz)``): copied once to a
temporary file for the command.

The readers open an input more than once (the FASTA readers look at the first bytes for gzip
and judge the kind of sequence before they read the records; large files are scanned in
parallel pieces at their offsets), which a pipe cannot give: its content is read once and gone.
Errors name the path the user gave, not the copy.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from typing import Iterator

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.atomic import is_stream

INPUT_OPTIONS = ("query", "target", "db", "input", "fasta", "reference", "pairs", "triplets", "lines",
                 "paf", "bam", "hits", "search_query", "search_db")
"""Attributes of the parsed command line that name files the command reads (one path or a list).
An option of these names that a command writes (none today) must not be added here."""


def _copy(path: str) -> str:
    """A temporary regular file holding everything readable from ``path``."""
    fd, copy = tempfile.mkstemp(prefix="gpualign-input-", suffix="-" + os.path.basename(path))
    try:
        with open(path, "rb") as source, os.fdopen(fd, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
    except BaseException as exc:  # Ctrl-C or SIGTERM while a long pipe is read: no copy left behind
        os.unlink(copy)
        if isinstance(exc, OSError):
            raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from exc
        raise
    return copy


@contextlib.contextmanager
def spooled_inputs(args: argparse.Namespace) -> Iterator[None]:
    """Replace each input path of ``args`` (:data:`INPUT_OPTIONS`) that names a stream
    (:func:`~gpualign_plugin.io.atomic.is_stream`) by a temporary copy of its content for the
    block; one copy per stream however often it is named. An
    :class:`~gpualign_plugin.errors.InputError` raised in the block about a copy names the
    stream instead. The copies are removed at the end."""
    originals: dict[str, str] = {}
    copies: dict[str, str] = {}

    def spooled(value):
        if isinstance(value, list):
            return [spooled(item) for item in value]
        if not isinstance(value, str) or not is_stream(value):
            return value
        if value not in copies:
            copies[value] = _copy(value)
            originals[copies[value]] = value
        return copies[value]

    try:
        for name in INPUT_OPTIONS:
            if hasattr(args, name):
                setattr(args, name, spooled(getattr(args, name)))
        yield
    except InputError as exc:
        if exc.path in originals:
            exc.path = originals[exc.path]
            exc.args = (exc.one_line(),)
        raise
    finally:
        for copy in originals:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(copy)
