"""The demo workflow on a GPU node: every alignment job runs on the GPU, outputs equal the CPU's.

Marker ``gpu`` (skipped without a usable GPU). The demo runs twice in copies of the
repository, once with ``backend: gpu`` (a job that cannot use the GPU fails instead of
falling back) and ``--resources gpu=1``, once with ``backend: cpu``. Every alignment job's
run statistics must name the GPU, and every output file must be identical between the two
runs, byte for byte, except what records the run itself: the ``@PG`` command lines of BAM
and SAM headers (they say ``--backend gpu``), the indexes of those BAMs, the run statistics
and the throughput pages of the report built from them.
"""

from __future__ import annotations

import json
import os

import pysam
import pytest

from test_workflow import SNAKEMAKE, copy_project, snakemake

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")]

ALIGNMENT_COMMANDS = {"pairwise", "syntenic", "search", "align3"}
RUN_RECORDS = ("stats", "report", ".gpu-slots")
"""Folders under results/ that describe the run (engine, timings), not the answer."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The demo's results/ folders of a GPU run and a CPU run."""
    results = {}
    for backend in ("gpu", "cpu"):
        project = copy_project(tmp_path_factory.mktemp(f"demo-{backend}"))
        snakemake(project, "--cores", str(os.cpu_count()), "--resources", "gpu=1",
                  "--config", f"backend={backend}", "local_gpus=1", timeout=1500)
        results[backend] = os.path.join(project, "results")
    return results


def answer_files(results: str) -> list[str]:
    """Paths under ``results`` (relative) of every output that holds an answer."""
    found = []
    for folder, subfolders, files in os.walk(results):
        relative = os.path.relpath(folder, results)
        if relative.split(os.sep)[0] in RUN_RECORDS:
            subfolders[:] = []
            continue
        found += [os.path.normpath(os.path.join(relative, name)) for name in files
                  if not name.endswith((".bai", ".csi")) and name != "report.html"]
    return sorted(found)


def without_program_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("@PG")]


def bam_content(path: str) -> tuple[list[str], list[str]]:
    with pysam.AlignmentFile(path, "rb") as bam:
        header = without_program_lines(str(bam.header).splitlines())
        return header, [record.to_string() for record in bam]


def test_every_alignment_job_ran_on_the_gpu(runs):
    statistics = []
    for folder, _subfolders, files in os.walk(os.path.join(runs["gpu"], "stats")):
        statistics += [json.load(open(os.path.join(folder, name))) for name in files
                       if name.endswith(".json")]
    assert ALIGNMENT_COMMANDS <= {stats["command"] for stats in statistics}
    for stats in statistics:
        assert stats["engine"] == "gpu", stats
        assert stats["device"] and stats["peak_gpu_memory_bytes"] > 0, stats


def test_gpu_and_cpu_runs_write_identical_outputs(runs):
    files = answer_files(runs["gpu"])
    assert files == answer_files(runs["cpu"])
    assert any(name.endswith(".bam") for name in files) and any(name.endswith(".maf") for name in files)
    for name in files:
        gpu, cpu = (os.path.join(runs[backend], name) for backend in ("gpu", "cpu"))
        if name.endswith(".bam"):
            assert bam_content(gpu) == bam_content(cpu), name
        elif name.endswith(".sam"):
            assert without_program_lines(open(gpu).read().splitlines()) == \
                without_program_lines(open(cpu).read().splitlines()), name
        else:
            assert open(gpu, "rb").read() == open(cpu, "rb").read(), name
