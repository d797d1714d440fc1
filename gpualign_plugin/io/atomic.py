"""Atomic output: write to a temporary name beside the target, rename when complete.

An interrupted run (an exception, Ctrl-C, a killed job) never leaves a truncated
file under the final name: either the complete file is there or nothing is.

An output that already exists and is not a regular file (``/dev/stdout``, ``/dev/null``, a named
pipe) is a stream (:func:`is_stream`): it is written in place, never replaced by a renamed file
nor removed after a failure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from typing import Iterator

_FULL_OR_READ_ONLY = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
"""Errors of writing an output (disk full, quota, read-only file system) that the command line
reports as one line naming the output, like an output directory that cannot be written."""


def _output_error(exc: OSError, path: str):
    """The :class:`~gpualign_plugin.errors.InputError` for an output that cannot be written."""
    from gpualign_plugin.errors import InputError

    return InputError(f"cannot be written: {exc.strerror or exc}", path=path)


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an existing file that is not a regular file (after symbolic links):
    a terminal, a pipe, ``/dev/null``. Such an output is written in place."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not os.path.isdir(path)
    except OSError:
        return False


def _temporary(path: str, suffix: str = "") -> str:
    """A new empty temporary file beside ``path`` (its directory created if missing)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                   suffix=".part" + suffix, dir=directory)
    except OSError as exc:
        raise _output_error(exc, path) from exc
    os.close(fd)
    return tmp


def _publish(tmp: str, path: str) -> None:
    """Rename the finished ``tmp`` to ``path``, with the permissions a plain open() would give."""
    # mkstemp creates 0600; give the file the permissions a plain open() would (umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[str]:
    """Yield a temporary path in the target's directory; rename it to ``path`` on success.

    On any exception the temporary file is removed and the exception propagates.
    ``suffix`` is appended to the temporary name (some writers, such as pysam,
    choose the format from the extension). A missing directory is created.
    """
    path = os.fspath(path)
    if is_stream(path):
        yield path
        return
    tmp = _temporary(path, suffix)
    try:
        yield tmp
        _publish(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _FULL_OR_READ_ONLY:
            raise _output_error(exc, path) from exc
        raise


class AtomicTextFiles:
    """Text files written over a long run (streamed) that appear under their names together at the end.

    Made by :func:`atomic_text_files`: :meth:`open` gives a handle on a temporary file beside
    the target; the files are renamed into place only when the block ends without an
    exception, in the order opened, each appended to ``written`` (the list of
    :func:`all_or_none`) as soon as it is in place. On an exception every temporary file is removed.
    """

    def __init__(self, written: list):
        self._open: list = []  # (handle, temporary path, final path)
        self._written = written

    def open(self, path: str | os.PathLike):
        """A text handle (UTF-8, ``\\n`` line ends) whose file appears under ``path`` at the end."""
        path = os.fspath(path)
        tmp = path if is_stream(path) else _temporary(path)
        handle = open(tmp, "w", encoding="utf-8", newline="\n")
        self._open.append((handle, tmp, path))
        return handle

    def _publish_all(self) -> None:
        for handle, _tmp, _path in self._open:
            handle.close()
        while self._open:
            _handle, tmp, path = self._open[0]
            if tmp != path:
                _publish(tmp, path)
            self._open.pop(0)
            self._written.append(path)

    def _discard(self) -> None:
        for handle, tmp, path in self._open:
            handle.close()
            if tmp != path:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        self._open = []


@contextlib.contextmanager
def atomic_text_files(written: list) -> Iterator[AtomicTextFiles]:
    """Several streamed text outputs, renamed into place together at the end of the block.

    ``written`` is the list of an enclosing :func:`all_or_none`: each file is added to it once
    renamed, so a failure in a later rename (or after the block) removes it again.
    """
    files = AtomicTextFiles(written)
    try:
        yield files
        files._publish_all()
    except BaseException:
        files._discard()
        raise


@contextlib.contextmanager
def all_or_none() -> Iterator[list]:
    """Collect the paths a command writes; if the command fails, remove every one of them.

    Each writer is atomic on its own (:func:`atomic_path`); this makes a command's
    outputs atomic as a set. Append each path to the yielded list once it is written
    (with its index files, if any); on any exception they are all deleted (streams,
    :func:`is_stream`, are left alone) and the exception propagates.
    """
    written: list = []
    try:
        yield written
    except BaseException:
        for path in written:
            if not is_stream(path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        raise


@contextlib.contextmanager
def atomic_text(path: str | os.PathLike) -> Iterator:
    """Open a text file for writing that appears under ``path`` only once closed successfully."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            yield handle


def text_output(path_or_handle):
    """A context manager giving a text handle: a path is written atomically
    (:func:`atomic_text`); an open handle is used as it is and left open."""
    if hasattr(path_or_handle, "write"):
        return contextlib.nullcontext(path_or_handle)
    return atomic_text(path_or_handle)


def check_writable(path: str | os.PathLike) -> None:
    """Raise :class:`~gpualign_plugin.errors.InputError` if ``path`` cannot be created.

    Called before long work starts, so a bad ``--out`` fails in a second, not after an hour.
    A missing output directory is fine when it could be made (its nearest existing ancestor is
    a writable directory); it is created only when the output is written
    (:func:`atomic_path`), so a command that stops on bad input leaves no empty directory.
    """
    from gpualign_plugin.errors import InputError

    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError("output path is a directory", path=path)
    if is_stream(path):
        if not os.access(path, os.W_OK):
            raise InputError("output is not writable", path=path)
        return
    ancestor = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise InputError(f"cannot create the output directory ({ancestor} is not a directory)",
                         path=path)
    if not os.access(ancestor, os.W_OK):
        raise InputError(f"output directory is not writable ({ancestor})", path=path)
