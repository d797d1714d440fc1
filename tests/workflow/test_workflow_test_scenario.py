"""The `.test/` scenario (the catalog's small config) run for real, then run again.

Every analysis runs on a few kilobases (`.test/config/config.yaml`). A second
``snakemake`` straight after a complete run (and after ``--report``) must have nothing
to do: no parameter or command may change between invocations. Editing one input then
(its content edited) reruns only the jobs that depend on it.
"""

from __future__ import annotations

import os
import re

import pytest

from test_workflow import SNAKEMAKE, copy_project, snakemake

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")


def planned_rules(project: str) -> dict[str, int]:
    """The rules ``snakemake -n`` in ``project/.test`` would run, with their job counts."""
    result = snakemake(project, "-n", "--quiet", "rules", "--directory", ".test")
    return {match.group(1): int(match.group(2)) for match in
            re.finditer(r"^(\w+)\s+(\d+)\s*$", result.stdout + result.stderr, re.M) if match.group(1) != "total"}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """A copy of the repository with `.test/` run to completion and its report made."""
    project = copy_project(tmp_path_factory.mktemp("scenario"), extra=(".test",))
    snakemake(project, "--cores", "2", "--directory", ".test")
    snakemake(project, "--report", "results/report.html", "--directory", ".test")
    return project


def test_test_scenario_runs_every_analysis(scenario):
    results = os.path.join(scenario, ".test", "results")
    for path in ("pairwise/strain.bam", "pairwise/strain.bam.bai", "pairwise/strain.paf",
                 "syntenic/strain/strain.summary.txt", "search/hits.tsv", "three_way/all.maf",
                 "report.html"):
        assert os.path.getsize(os.path.join(results, path)) > 0, path


def test_second_run_has_nothing_to_do(scenario):
    result = snakemake(scenario, "-n", "--directory", ".test")
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]
    assert planned_rules(scenario) == {}


def test_editing_an_input_reruns_only_what_depends_on_it(scenario):
    # Snakemake compares checksums of small inputs: a new mtime alone is not a change.
    with open(os.path.join(scenario, ".test", "data", "queries.fa"), "a") as handle:
        handle.write("\n")
    assert planned_rules(scenario) == {"search_shard": 2, "merge_search": 1, "report_hits": 1,
                                       "report_throughput": 1, "all": 1}

