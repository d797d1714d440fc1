"""The workflow through a real SLURM cluster (the slurm profile and executor plugin).

Needs a running cluster (CI starts a single-node one with .ci/slurm-up.sh and stops it
with .ci/slurm-down.sh); skipped when ``sinfo`` does not answer or the executor plugin is
not installed. A reduced config of the demo (a small genome placed by pairwise alignment,
protein search, globin triplets) runs on the CPU through ``workflow/profiles/slurm``; the
test checks the outputs and that every job was an sbatch job SLURM ran to completion.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess

import pytest

from test_workflow import bam_records, copy_project, small_config, snakemake

pytestmark = pytest.mark.slurm


def _cluster_reason() -> str:
    if shutil.which("sinfo") is None:
        return "sinfo is not installed"
    try:
        answer = subprocess.run(["sinfo", "-h", "-o", "%P %a"], capture_output=True, text=True,
                                timeout=10)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer"
    if answer.returncode != 0 or "up" not in answer.stdout:
        return "no SLURM partition is up (start one with .ci/slurm-up.sh)"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed"
    return ""


REASON = _cluster_reason()


@pytest.mark.skipif(bool(REASON), reason=REASON or "cluster available")
def test_reduced_demo_runs_through_slurm(tmp_path):
    project = copy_project(tmp_path / "slurm")
    config = small_config(project, analyses=("pairwise", "search", "three_way"), shards=2)
    partition = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True,
                               check=True).stdout.split()[0].rstrip("*")
    result = snakemake(
        project, "--workflow-profile", "workflow/profiles/slurm", "--configfile", config,
        "--default-resources", f"slurm_partition={partition}", "runtime=30", "mem_mb=1000",
        # No slurmdbd here: sacct has no history, squeue keeps finished jobs (MinJobAge).
        "--slurm-status-command", "squeue",
        "--slurm-init-seconds-before-status-checks", "2",
        "--jobs", "4", timeout=900)
    output = result.stdout + result.stderr
    submitted = set(re.findall(r"SLURM jobid (\d+)", output)) | set(
        re.findall(r"Submitted batch job (\d+)", output))
    # split, 2 pairwise shards, merge, 2 search shards, merge, triplet split, 2 batches,
    # merge, 3 report jobs
    assert len(submitted) >= 10, output[-3000:]
    states = subprocess.run(["squeue", "--states=all", "-h", "-o", "%i %T"], capture_output=True,
                            text=True, check=True).stdout
    state_of = dict(line.split() for line in states.splitlines())
    assert all(state_of.get(job) == "COMPLETED" for job in submitted), (submitted, states)
    records = bam_records(os.path.join(project, "results", "pairwise", "smallq.bam"))
    assert {record[0] for record in records} == {"read/1{a}", "ctg:2", "ctg|3", "ctg_4"}
    rows = [line.split("\t") for line in open(os.path.join(project, "results", "search",
                                                           "hits.tsv"))]
    assert rows and all(len(row) == 12 for row in rows)
    assert open(os.path.join(project, "results", "three_way", "all.maf")).read().startswith("##maf")
