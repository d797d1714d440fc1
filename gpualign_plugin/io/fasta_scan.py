"""The compiled (Numba) passes of :func:`gpualign_plugin.io.fasta.read_fasta_arrays`.

A module of their own so that reading FASTA does not import Numba until a file is read in
bulk: Numba's import costs about 0.3 s, which a GPU command that reads its queries record by
record does not pay on its way to the device.
"""

import numpy as np
from numba import njit, prange

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, nogil=True)
def _scan_piece(raw, start, stop, whitespace, table, text, codes, lengths, headers, hashes, write):
    """Read ``raw[start:stop]`` (whole records, every line ended by a newline); without
    ``write`` only count.

    Returns ``(records, header bytes, residues, residues outside the alphabet)``; with
    ``write``, ``text``, ``codes``, ``lengths``, ``headers`` and ``hashes`` are the piece's
    own slices. One line at a time, so that the loop over a sequence line's bytes tests only
    for its newline and for whitespace.
    """
    records = header_bytes = residues = bad = 0
    record_start = 0
    i = start
    while i < stop:
        if raw[i] == 62:
            if write and records > 0:
                lengths[records - 1] = residues - record_start
            records += 1
            record_start = residues
            i += 1
            digest = _FNV_OFFSET
            while raw[i] != 10:
                if write:
                    headers[header_bytes] = raw[i]
                    digest = (digest ^ np.uint64(raw[i])) * _FNV_PRIME
                header_bytes += 1
                i += 1
            if write:
                headers[header_bytes] = 10
                hashes[records - 1] = digest
            header_bytes += 1
        else:
            while raw[i] != 10:
                c = raw[i]
                if not whitespace[c]:
                    code = table[c]
                    if write:
                        text[residues] = c
                        codes[residues] = code
                    bad += code == 255
                    residues += 1
                i += 1
        i += 1
    if write and records > 0:
        lengths[records - 1] = residues - record_start
    return records, header_bytes, residues, bad


@njit(cache=True, parallel=True)
def scan_records(raw, bounds, whitespace, table):
    """Every record of FASTA bytes (starting with ``>``, ending with a newline), pieces in parallel.

    ``bounds`` cuts ``raw`` into pieces at record starts
    (:func:`gpualign_plugin.io.fasta._record_chunks`).
    Returns the residues (the bytes of non-header lines that are not whitespace), their
    codes (``table`` of each byte), each record's residue count, the header lines
    without their ``>``, each ended by a newline, each header line's 64-bit FNV-1a hash
    (without its newline: equal lines, equal hashes) and the number of residues whose
    code is 255 (outside the alphabet).
    """
    pieces = bounds.shape[0] - 1
    sizes = np.zeros((pieces + 1, 4), np.int64)
    empty = np.empty(0, np.uint8)
    no_lengths = np.empty(0, np.int64)
    no_hashes = np.empty(0, np.uint64)
    for p in prange(pieces):
        r, h, n, b = _scan_piece(raw, bounds[p], bounds[p + 1], whitespace, table, empty, empty,
                                 no_lengths, empty, no_hashes, False)
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
    hashes = np.empty(sizes[pieces, 0], np.uint64)
    for p in prange(pieces):
        _scan_piece(raw, bounds[p], bounds[p + 1], whitespace, table,
                    text[sizes[p, 2]:sizes[p + 1, 2]], codes[sizes[p, 2]:sizes[p + 1, 2]],
                    lengths[sizes[p, 0]:sizes[p + 1, 0]], headers[sizes[p, 1]:sizes[p + 1, 1]],
                    hashes[sizes[p, 0]:sizes[p + 1, 0]], True)
    return text, codes, lengths, headers, hashes, sizes[pieces, 3]
