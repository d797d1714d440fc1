"""The demo workflow on a GPU node: every alignment job runs on the GPU, outputs equal the CPU's.

Marker ``gpu`` (skipped without a usable GPU). The demo runs twice in copies of the
repository, once with ``backend: gpu`` (a job that cannot use the GPU fails instead of
falling back) and ``--resources gpu=1``, once with ``backend: cpu``. Every alignment job's
run statistics must name the GPU, and every output file must be identical between the two
runs, byte for byte, except what records the run itself: the command lines written into
headers (``@PG`` of BAM and SAM, ``# command:`` of block tables, ``# gpualign ...`` of MAF,
``##gpualignCommand`` of VCF; they say ``--backend gpu``), the indexes of those BAMs, the run statistics and the throughput
pages of the report built from them.
"""

from __future__ import annotations

import json
import os

import pysam
import pytest

from test_workflow import SNAKEMAKE, copy_project, snakemake

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")]

ALIGNMENT_COMMANDS = {"pairwise", "syntenic", "compare", "search", "align3"}
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


COMMAND_LINE_PREFIXES = ("@PG", "# command: gpualign ", "# gpualign ", "# Commandline: gpualign ",
                         "##gpualignCommand=")


def without_command_lines(lines: list[str]) -> list[str]:
    """``lines`` without the header lines that record the command which wrote the file."""
    return [line for line in lines if not line.startswith(COMMAND_LINE_PREFIXES)]


def bam_content(path: str) -> tuple[list[str], list[str]]:
    with pysam.AlignmentFile(path, "rb") as bam:
        header = without_command_lines(str(bam.header).splitlines())
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


def same_answer(gpu: str, cpu: str) -> bool:
    """Do the files ``gpu`` and ``cpu`` hold the same answer (command-line headers aside)?"""
    if gpu.endswith(".bam"):
        return bam_content(gpu) == bam_content(cpu)
    gpu_bytes, cpu_bytes = open(gpu, "rb").read(), open(cpu, "rb").read()
    if gpu.endswith(".png"):
        return gpu_bytes == cpu_bytes
    return (without_command_lines(gpu_bytes.decode("latin-1").split("\n")) ==
            without_command_lines(cpu_bytes.decode("latin-1").split("\n")))


def test_gpu_and_cpu_runs_write_identical_outputs(runs):
    files = answer_files(runs["gpu"])
    assert files == answer_files(runs["cpu"])
    assert any(name.endswith(".bam") for name in files) and any(name.endswith(".maf") for name in files)
    different = [name for name in files
                 if not same_answer(*(os.path.join(runs[backend], name) for backend in ("gpu", "cpu")))]
    assert different == []
