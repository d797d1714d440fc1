"""Atomic outputs: complete files only, ordinary permissions, and all-or-none sets of outputs."""

import io
import os
import stat

import pytest

from gpualign_plugin.io.atomic import all_or_none, atomic_text, check_writable, text_output
from gpualign_plugin.errors import InputError


def test_a_finished_file_gets_the_permissions_of_a_plain_open(tmp_path):
    umask = os.umask(0o022)
    try:
        with atomic_text(tmp_path / "out.txt") as handle:
            handle.write("done\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "out.txt").st_mode) == 0o644
    assert (tmp_path / "out.txt").read_text() == "done\n"


def test_a_failure_inside_leaves_neither_the_file_nor_a_temporary(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_text(tmp_path / "out.txt") as handle:
            handle.write("half")
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path) == []


def test_all_or_none_removes_every_output_already_written(tmp_path):
    first = tmp_path / "a.txt"
    with pytest.raises(ValueError):
        with all_or_none() as written:
            first.write_text("complete")
            written.append(str(first))
            written.append(str(tmp_path / "never-made.bai"))
            raise ValueError("second output failed")
    assert os.listdir(tmp_path) == []


def test_text_output_leaves_an_open_handle_open():
    buffer = io.StringIO()
    with text_output(buffer) as handle:
        handle.write("x")
    assert not buffer.closed and buffer.getvalue() == "x"


def test_check_writable_accepts_a_missing_directory_without_making_it_or_names_the_path(tmp_path):
    check_writable(tmp_path / "missing" / "deeper" / "x.bam")
    assert not (tmp_path / "missing").exists()  # made when the output is written, not before
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="file/sub/x.bam: cannot create the output directory"):
        check_writable(tmp_path / "file" / "sub" / "x.bam")


def test_atomic_writes_create_their_directory(tmp_path):
    with atomic_text(tmp_path / "new" / "dir" / "x.txt") as handle:
        handle.write("done\n")
    assert (tmp_path / "new" / "dir" / "x.txt").read_text() == "done\n"


@pytest.mark.parametrize("where", ["create", "write"])
def test_an_output_that_cannot_be_written_is_one_line_and_status_2(tmp_path, monkeypatch, capsys, where):
    # A read-only file system or a full disk (or a directory such as /proc that root may
    # "write" but no file can be made in) ended in a traceback and status 1 after all the work.
    import errno

    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io import atomic

    if where == "create":
        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, "Read-only file system")
        monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    else:
        def full(tmp, path):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(atomic, "_publish", full)
    (tmp_path / "q.fa").write_text(">q\nACGTACGTTTGACCA\n")
    (tmp_path / "t.fa").write_text(">t\nGGACGTACGTTTGACCAGG\n")
    out = tmp_path / "out.paf"
    status = main(["pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--mode",
                   "global", "--backend", "cpu", "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2
    message = [line for line in err.splitlines() if "error" in line]
    reason = "Read-only file system" if where == "create" else "No space left on device"
    assert message == [f"gpualign: error: {out}: cannot be written: {reason}"]
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.fa", "t.fa"]


def test_a_stream_is_written_in_place_and_never_replaced_nor_removed(tmp_path):
    """An output that exists and is not a regular file (a named pipe here; ``/dev/stdout`` and
    ``/dev/null`` alike) is written as it is: replacing it by a renamed file would, run as root,
    turn ``/dev/stdout`` into a regular file, and removing it after a failure would delete it."""
    import threading

    from gpualign_plugin.io.atomic import atomic_path, atomic_text_files, is_stream

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert is_stream(fifo) and not is_stream(tmp_path) and not is_stream(tmp_path / "missing")
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    with atomic_text(fifo) as handle:
        handle.write("first\n")
    reader.join()
    assert received == ["first\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    with pytest.raises(ValueError):
        with all_or_none() as written:
            with atomic_text_files(written) as files:
                files.open(fifo).write("second\n")
            with atomic_path(fifo) as same:
                assert same == str(fifo)
            raise ValueError("a later output failed")
    reader.join()
    assert received[1] == "second\n" and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]
    check_writable(fifo)
