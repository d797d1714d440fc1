"""The compiled (Numba) passes of :func:`gpualign_plugin.io.fasta.read_fasta_arrays`.

A module of their own so that reading FASTA does not import Numba until a file is read in
bulk: Numba's import costs about 0.3 s, which a GPU command that reads its queries record by
record does not pay on its way to the device.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _scan_piece(raw, start, stop, whitespace, table, text, codes, lengths, headers, write):
    """Read ``raw[start:stop]`` (whole records); without ``write`` only count.

    Returns ``(records, header bytes, residues, residues outside the alphabet)``; with
    ``write``, ``text``, ``codes``, ``lengths`` and ``headers`` are the piece's own slices.
    """
    records = header_bytes = residues = bad = 0
    line_start = True
    in_header = False
    count = 0
    for i in range(start, stop):
        c = raw[i]
        if line_start and c == 62:
            if write and records > 0:
                lengths[records - 1] = count
            records += 1
            count = 0
            in_header = True
        elif in_header:
            if write:
                headers[header_bytes] = c
            header_bytes += 1
            in_header = c != 10
        elif not whitespace[c]:
            if write:
                text[residues] = c
                codes[residues] = table[c]
            bad += table[c] == 255
            residues += 1
            count += 1
        line_start = c == 10
    if write and records > 0:
        lengths[records - 1] = count
    return records, header_bytes, residues, bad


@njit(cache=True, parallel=True)
def scan_records(raw, bounds, whitespace, table):
    """Every record of FASTA bytes (starting with ``>``, ending with a newline), pieces in parallel.

    ``bounds`` cuts ``raw`` into pieces at record starts
    (:func:`gpualign_plugin.io.fasta._record_chunks`).
    Returns the residues (the bytes of non-header lines that are not whitespace), their
    codes (``table`` of each byte), each record's residue count, the header lines
    without their ``>``, each ended by a newline, and the number of residues whose code
    is 255 (outside the alphabet).
    """
    pieces = bounds.shape[0] - 1
    sizes = np.zeros((pieces + 1, 4), np.int64)
    empty = np.empty(0, np.uint8)
    no_lengths = np.empty(0, np.int64)
    for p in prange(pieces):
        r, h, n, b = _scan_piece(raw, bounds[p], bounds[p + 1], whitespace, table, empty, empty,
                                 no_lengths, empty, False)
        sizes[p + 1, 0] = r
        sizes[p + 1, 1] = h
        sizes[p + 1, 2] = n
        sizes[p + 1, 3] = b
    for column in range(4):
        sizes[:, column] = np.cumsum(sizes[:, column])
    text = np.empty(sizes[pieces, 2], np.uint8)
    codes = np.empty(sizes[pieces, 2], np.uint8)
    lengths = np.empty(sizes[pieces, 0], np.int64)
    headers = np.empty(sizes[pieces, 1], np.uint8)
    for p in prange(pieces):
        _scan_piece(raw, bounds[p], bounds[p + 1], whitespace, table,
                    text[sizes[p, 2]:sizes[p + 1, 2]], codes[sizes[p, 2]:sizes[p + 1, 2]],
                    lengths[sizes[p, 0]:sizes[p + 1, 0]], headers[sizes[p, 1]:sizes[p + 1, 1]], True)
    return text, codes, lengths, headers, sizes[pieces, 3]
