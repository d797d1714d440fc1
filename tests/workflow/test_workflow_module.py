"""Reuse: a host workflow imports ours as a Snakemake module and runs two analyses end to end."""

from __future__ import annotations

import os

import pytest

from test_workflow import REPO, SNAKEMAKE, bam_records, small_config, snakemake

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")

HOST_SNAKEFILE = """\
configfile: "config/small.yaml"


module gpualign:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from gpualign as gpualign_*


rule all:
    input:
        "results/pairwise/smallq.bam",
        "results/search/hits.tsv",
        "results/report/top_hits.html",
        "host_summary.txt",
    default_target: True


rule count_hits:
    input:
        "results/search/hits.tsv",
    output:
        "host_summary.txt",
    log:
        "logs/count_hits.log",
    shell:
        "wc -l < {{input}} > {{output}} 2> {{log}}"
"""


def test_host_workflow_runs_our_rules_through_module_import(tmp_path):
    host = tmp_path / "host"
    os.makedirs(host / "config")
    os.symlink(os.path.join(REPO, "resources"), host / "resources")
    config = small_config(str(host), analyses=("pairwise", "search"))
    with open(host / "Snakefile", "w") as handle:
        handle.write(HOST_SNAKEFILE.format(
            snakefile=os.path.join(REPO, "workflow", "Snakefile")))
    result = snakemake(str(host), "--cores", "2", "--configfile", config, "--directory",
                       str(host), "--snakefile", str(host / "Snakefile"))
    output = result.stdout + result.stderr
    for rule in ("gpualign_split_genome", "gpualign_pairwise_shard", "gpualign_merge_pairwise",
                 "gpualign_search_shard", "gpualign_merge_search"):
        assert rule in output, rule
    names = {record[0] for record in bam_records(str(host / "results" / "pairwise" / "smallq.bam"))}
    assert names == {"read/1{a}", "ctg:2", "ctg|3", "ctg_4"}
    rows = [line.split("\t") for line in open(host / "results" / "search" / "hits.tsv")]
    assert rows and all(len(row) == 12 for row in rows)
    assert int(open(host / "host_summary.txt").read()) == len(rows)
    assert (host / "results" / "report" / "top_hits.html").stat().st_size > 0
