"""Summary figures of a BAM file, as ``samtools stats`` and ``samtools coverage`` define them.

Counts follow ``samtools stats``' SN lines: *records* are primary records (neither
secondary nor supplementary), of which *mapped* and *unmapped*; *supplementary* and
*secondary* count those records. Identity and coverage use every mapped record that is
not secondary (primary and supplementary), as ``samtools coverage`` does by default:
a reference base is covered when an aligned base (CIGAR ``M``, ``=`` or ``X``, not a
deletion) lies on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from gpualign_plugin.errors import InputError

_ALIGNED = (0, 7, 8)  # M, =, X
_MATCH, _MISMATCH, _INSERTION, _DELETION = 7, 8, 1, 2


@dataclass(frozen=True)
class BamStatistics:
    """Figures of one BAM file (counts of records, bases and alignment columns)."""

    records: int
    """Primary records (``samtools stats``: raw total sequences)."""
    mapped: int
    """Primary records that are mapped (reads mapped)."""
    unmapped: int
    """Primary records that are unmapped (reads unmapped)."""
    supplementary: int
    """Supplementary records (supplementary alignments)."""
    secondary: int
    """Secondary records (non-primary alignments)."""
    columns: int
    """Alignment columns (``=``, ``X``, ``I``, ``D``) of the primary and supplementary records."""
    matches: int
    """Identical columns (``=``) among them."""
    reference_length: int
    """Total length of the ``@SQ`` records, bp."""
    covered_bases: int
    """Reference bases under at least one aligned base (``samtools coverage``: covbases)."""
    aligned_bases: int
    """Aligned bases (``M``, ``=``, ``X``) on the reference, for the mean depth."""

    @property
    def identity(self) -> float:
        """Matches / alignment columns, in percent (0 without alignments)."""
        return 100.0 * self.matches / self.columns if self.columns else 0.0

    @property
    def coverage(self) -> float:
        """Covered reference bases / reference length, in percent."""
        return 100.0 * self.covered_bases / self.reference_length if self.reference_length else 0.0

    @property
    def mean_depth(self) -> float:
        """Aligned bases / reference length (``samtools coverage``: meandepth over all records)."""
        return self.aligned_bases / self.reference_length if self.reference_length else 0.0


def bam_statistics(path: str | os.PathLike) -> BamStatistics:
    """Read the BAM (or SAM) file at ``path`` and return its :class:`BamStatistics`.

    Identity counts ``=`` columns as matches, so it needs the ``=``/``X`` CIGAR that
    gpualign writes; an ``M`` operation counts as aligned but not as a match.

    Raises
    ------
    InputError
        When the file is missing or not a readable SAM/BAM file.
    """
    import pysam

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError("no such file", path=path)
    try:
        handle = pysam.AlignmentFile(path, check_sq=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable SAM/BAM file ({exc})", path=path) from None
    counts = dict(records=0, mapped=0, unmapped=0, supplementary=0, secondary=0, columns=0,
                  matches=0, aligned_bases=0)
    with handle:
        covered = [np.zeros(length, dtype=bool) for length in handle.lengths]
        for record in handle:
            if record.is_secondary:
                counts["secondary"] += 1
                continue
            if record.is_supplementary:
                counts["supplementary"] += 1
            else:
                counts["records"] += 1
                counts["mapped" if not record.is_unmapped else "unmapped"] += 1
            if record.is_unmapped or record.cigartuples is None:
                continue
            depth_row = covered[record.reference_id]
            position = record.reference_start
            for operation, length in record.cigartuples:
                if operation in _ALIGNED:
                    depth_row[position:position + length] = True
                    counts["aligned_bases"] += length
                if operation in (_MATCH, _MISMATCH, _INSERTION, _DELETION):
                    counts["columns"] += length
                if operation == _MATCH:
                    counts["matches"] += length
                if operation in _ALIGNED or operation in (_DELETION, 3):
                    position += length
        reference_length = int(sum(handle.lengths))
    return BamStatistics(reference_length=reference_length,
                         covered_bases=int(sum(int(row.sum()) for row in covered)), **counts)
