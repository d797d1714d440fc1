"""Errors that the command line turns into one clear line and exit status 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from the user: a file, a record in it, a position, or an option.

    The message is one line and names what it can: the file, the record id and the
    1-based position of the offending character. The CLI prints it after
    ``gpualign: error:`` and exits with status 2.

    Parameters
    ----------
    message : str
        What is wrong, without the location.
    path : str, optional
        The file the problem is in.
    record : str, optional
        The FASTA record id (or other record name) the problem is in.
    position : int, optional
        1-based position inside the record's sequence (or line number when
        ``position_kind='line'``).
    position_kind : str
        ``'position'`` (sequence coordinate) or ``'line'`` (line of the file).
    file_line, file_column : int, optional
        Where a sequence position lies in the file (1-based line and column), when known.
    """

    def __init__(self, message: str, path: str | None = None, record: str | None = None,
                 position: int | None = None, position_kind: str = "position",
                 file_line: int | None = None, file_column: int | None = None):
        self.message = message
        self.path = path
        self.record = record
        self.position = position
        self.position_kind = position_kind
        self.file_line = file_line
        self.file_column = file_column
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The error as one line: ``FILE: record ID: position N: MESSAGE``, followed by
        ``(line L, column C of the file)`` where that is known."""
        parts = []
        if self.path is not None:
            parts.append(str(self.path))
        if self.record is not None:
            parts.append(f"record {self.record!r}")
        if self.position is not None:
            parts.append(f"{self.position_kind} {self.position}")
        parts.append(self.message)
        where = f" (line {self.file_line}, column {self.file_column} of the file)" if self.file_line else ""
        return (": ".join(parts) + where).replace("\n", " ")


class BackendUnavailable(Exception):
    """The requested compute backend (e.g. ``gpu``) cannot run here; the message says why."""
