"""BAM summary figures equal samtools' own (samtools stats and samtools coverage, run for real)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pysam
import pytest

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.bam_stats import bam_statistics

pytestmark = pytest.mark.skipif(shutil.which("samtools") is None, reason="samtools is not installed")


def write_bam(path):
    header = {"HD": {"VN": "1.6", "SO": "coordinate"},
              "SQ": [{"SN": "chr1", "LN": 1000}, {"SN": "chr2", "LN": 500}]}
    # name, flag, reference, start, CIGAR
    rows = [("a", 0, 0, 10, "50=2X3I20=5D30="), ("a", 2048, 0, 300, "20S40=1X9="),
            ("a", 256, 1, 5, "60="), ("b", 16, 0, 40, "100="), ("c", 4, -1, -1, None),
            ("d", 0, 1, 400, "30=2D20=")]
    records = []
    with pysam.AlignmentFile(path, "wb", header=header) as bam:
        for name, flag, reference, start, cigar in rows:
            record = pysam.AlignedSegment(bam.header)
            record.query_name, record.flag = name, flag
            record.reference_id, record.reference_start = reference, start
            if cigar:
                record.cigarstring = cigar
                record.mapping_quality = 60
            length = sum(int(n) for n, op in re.findall(r"(\d+)([=XIS])", cigar or "30S"))
            record.query_sequence = "A" * length
            records.append(record)
        for record in sorted(records, key=lambda r: (r.reference_id % 99, r.reference_start)):
            bam.write(record)
    pysam.index(str(path))


def samtools(*args):
    return subprocess.run(["samtools", *args], capture_output=True, text=True, check=True).stdout


def test_counts_identity_and_coverage_equal_samtools(tmp_path):
    path = tmp_path / "x.bam"
    write_bam(path)
    stats = bam_statistics(path)
    sn = dict(line.split("\t")[1:3] for line in samtools("stats", str(path)).splitlines()
              if line.startswith("SN\t"))
    assert stats.records == int(sn["raw total sequences:"]) == 4
    assert stats.mapped == int(sn["reads mapped:"]) == 3
    assert stats.unmapped == int(sn["reads unmapped:"]) == 1
    assert stats.supplementary == int(sn["supplementary alignments:"]) == 1
    assert stats.secondary == int(sn["non-primary alignments:"]) == 1
    coverage = [line.split("\t") for line in samtools("coverage", str(path)).splitlines()[1:]]
    assert stats.covered_bases == sum(int(row[4]) for row in coverage)
    assert stats.reference_length == 1500
    assert stats.mean_depth == pytest.approx(
        sum(float(row[6]) * int(row[2]) for row in coverage) / 1500, rel=1e-5)
    # Columns of a, a (supplementary), b, d; = columns among them.
    assert (stats.columns, stats.matches) == (110 + 50 + 100 + 52, 100 + 49 + 100 + 50)
    assert stats.identity == pytest.approx(100 * 299 / 312)


def test_missing_or_broken_file_is_named(tmp_path):
    with pytest.raises(InputError, match="missing.bam"):
        bam_statistics(tmp_path / "missing.bam")
    (tmp_path / "junk.bam").write_bytes(b"not a bam")
    with pytest.raises(InputError, match="junk.bam"):
        bam_statistics(tmp_path / "junk.bam")
