"""The `.test/` scenario (the catalog's small config) run for real, then run again.

Every analysis runs on a few kilobases (`.test/config/config.yaml`). A second
``snakemake`` straight after a complete run (and after ``--report``) must have nothing
to do: no parameter or command may change between invocations. Editing one input then
(its content edited) reruns only the jobs that depend on it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from test_workflow import SNAKEMAKE, copy_project, snakemake

pytestmark = [
    pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed"),
    pytest.mark.skipif(shutil.which("samtools") is None, reason="samtools is not installed"),
]


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
                 "compare/strain/strain.report", "compare/strain/strain.vcf", "search/hits.tsv", "three_way/all.maf",
                 "report/identity.png", "report/bam_stats.html", "report/three_way.html",
                 "report.html"):
        assert os.path.getsize(os.path.join(results, path)) > 0, path


def test_second_run_has_nothing_to_do(scenario):
    result = snakemake(scenario, "-n", "--directory", ".test")
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]
    assert planned_rules(scenario) == {}


def read_tsv(path):
    with open(path) as handle:
        header = handle.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in handle]


def test_report_bam_figures_equal_samtools(scenario):
    results = os.path.join(scenario, ".test", "results")
    (row,) = read_tsv(os.path.join(results, "report", "bam_stats.tsv"))
    bam = os.path.join(results, "pairwise", "strain.bam")
    sn = dict(line.split("\t")[1:3] for line in subprocess.run(
        ["samtools", "stats", bam], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.startswith("SN\t"))
    assert row["genome"] == "strain"
    assert int(row["records"]) == int(sn["raw total sequences:"]) > 0
    assert int(row["mapped"]) == int(sn["reads mapped:"])
    assert int(row["unmapped"]) == int(sn["reads unmapped:"])
    assert int(row["supplementary"]) == int(sn["supplementary alignments:"])
    coverage = subprocess.run(["samtools", "coverage", bam], capture_output=True, text=True,
                              check=True).stdout.splitlines()[1:]
    assert int(row["covered bp"]) == sum(int(line.split("\t")[4]) for line in coverage)
    # No index of a shard BAM is left behind once the shards are merged.
    assert not os.path.exists(os.path.join(results, "pairwise", "strain", "shards")) or \
        os.listdir(os.path.join(results, "pairwise", "strain", "shards")) == []


def test_report_three_way_rows_match_the_maf(scenario):
    from Bio import Align

    results = os.path.join(scenario, ".test", "results")
    rows = read_tsv(os.path.join(results, "report", "three_way.tsv"))
    blocks = list(Align.parse(os.path.join(results, "three_way", "all.maf"), "maf"))
    assert len(rows) == len(blocks) == 3
    for row, block in zip(rows, blocks):
        texts = [block[index] for index in range(3)]
        assert row["rows"].split() == [record.id for record in block.sequences]
        assert int(row["columns"]) == block.length
        assert int(row["score"]) == block.score
        both = [(a, b) for a, b in zip(texts[0], texts[1]) if "-" not in (a, b)]
        assert float(row["identity 1-2 %"]) == pytest.approx(
            100 * sum(a == b for a, b in both) / len(both), abs=0.05)
        assert int(row["columns all identical"]) == sum(
            1 for column in zip(*texts) if column[0] != "-" and len(set(column)) == 1)


def test_sharded_search_of_the_prepared_database_equals_one_search_of_the_fasta(scenario, tmp_path):
    # The workflow parses the database once (makedb: results/search/db.gadb) and the shard
    # jobs read that; the merged tables must be the bytes of one search of the FASTA file.
    test = os.path.join(scenario, ".test")
    assert os.path.isfile(os.path.join(test, "results", "search", "db.gadb", "header.json"))
    subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "search", "-q", "data/queries.fa",
                    "-d", "data/database.fa", "--top", "3", "--backend", "cpu",
                    "--out-blast", tmp_path / "hits.tsv", "--out-tsv", tmp_path / "hits.table.tsv"],
                   cwd=test, check=True, capture_output=True)
    for name in ("hits.tsv", "hits.table.tsv"):
        with open(tmp_path / name, "rb") as direct, open(os.path.join(test, "results", "search", name), "rb") as merged:
            assert merged.read() == direct.read(), name


def test_editing_an_input_reruns_only_what_depends_on_it(scenario):
    # Snakemake compares checksums of small inputs: a new mtime alone is not a change.
    with open(os.path.join(scenario, ".test", "data", "queries.fa"), "a") as handle:
        handle.write("\n")
    assert planned_rules(scenario) == {"search_shard": 2, "merge_search": 1, "report_hits": 1,
                                       "report_throughput": 1, "all": 1}
    # (runs last: the scenario's outputs are no longer up to date)
