"""Record names as one byte array: millions of names without a Python string each until one is asked for."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

_NEWLINE = 10


class Names(Sequence):
    """Strings without newlines as one UTF-8 byte array, each followed by a newline.

    Name ``k`` is ``data[offsets[k]:offsets[k + 1] - 1]`` (``offsets[k + 1] - 1`` holds its
    newline). It reads as a sequence of ``str`` (``len``, indexing, iteration, ``==`` with a
    list): the strings are decoded all at once on first use, so code written for a list of
    names takes it unchanged, while the bulk writers and checks work on the bytes.
    """

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self.data = data
        self.offsets = offsets
        self._strings: list[str] | None = None

    @classmethod
    def of(cls, strings) -> "Names":
        """The :class:`Names` of a sequence of strings without newlines (itself when it is one)."""
        if isinstance(strings, Names):
            return strings
        data = np.frombuffer(("\n".join(strings) + "\n").encode("utf-8"), dtype=np.uint8)
        return cls.of_lines(data if len(strings) else data[:0])

    @classmethod
    def of_lines(cls, data: np.ndarray) -> "Names":
        """The names of newline-ended lines of UTF-8 ``data`` (``uint8``; empty, or ending with a newline)."""
        ends = np.flatnonzero(data == _NEWLINE) + 1
        return cls(data, np.concatenate(([0], ends)).astype(np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        return self.strings()[index]

    def __iter__(self):
        return iter(self.strings())

    def __eq__(self, other) -> bool:
        if isinstance(other, Names):
            return np.array_equal(self.data, other.data) and np.array_equal(self.offsets, other.offsets)
        return isinstance(other, Sequence) and not isinstance(other, (str, bytes)) and \
            self.strings() == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Names({len(self)} names)"

    def strings(self) -> list[str]:
        """Every name as a ``str`` (decoded on the first call, then kept)."""
        if self._strings is None:
            self._strings = bytes(self.data).decode("utf-8").split("\n")[:-1]
        return self._strings

    def lengths(self) -> np.ndarray:
        """``int64`` bytes of each name (without its newline)."""
        return np.diff(self.offsets) - 1

    def first_bytes(self) -> np.ndarray:
        """``uint8`` first byte of each name (the newline for an empty name)."""
        return self.data[self.offsets[:-1]]

    def only_bytes_outside(self, pattern: re.Pattern) -> bool:
        """Whether no byte of any name matches ``pattern``, a one-character class (``[^...]``)
        tried on each byte value as a latin-1 character; the newlines between names are not tested."""
        matched = np.array([pattern.fullmatch(chr(value)) is not None for value in range(256)])
        matched[_NEWLINE] = False
        return not matched[self.data].any()
