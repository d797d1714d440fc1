"""Reuse: a host workflow made of README.md's module snippet, as written there, runs our rules.

The snippet is read from README.md (only the Snakefile path is filled in); its config is the
`.test/` scenario with the query genome named as the snippet's targets name it.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
import yaml

from test_workflow import REPO, SNAKEMAKE, snakemake

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")

PLACEHOLDER = "/path/to/gpualign/workflow/Snakefile"


def readme_module_snippet() -> str:
    """The Python block of README.md that imports the workflow as a module."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S)
    snippets = [re.sub(rf"^{indent}", "", body, flags=re.M) for indent, body in blocks
                if "module gpualign:" in body]
    assert len(snippets) == 1, "README.md should hold one module snippet"
    return snippets[0]


def test_readme_module_snippet_runs_the_hosts_targets_only(tmp_path):
    snippet = readme_module_snippet()
    assert PLACEHOLDER in snippet and "default_target: True" in snippet
    targets = re.findall(r'^\s+"(results/[^"]+)",$', snippet, re.M)
    assert "results/pairwise/strainA.bam" in targets, targets
    host = tmp_path / "host"
    shutil.copytree(os.path.join(REPO, ".test", "data"), host / "data")
    config = yaml.safe_load(open(os.path.join(REPO, ".test", "config", "config.yaml")))
    config["genomes"][1]["name"] = "strainA"
    config["analyses"].update(syntenic=False, three_way=False)
    configfile = re.search(r'^configfile: "([^"]+)"', snippet, re.M).group(1)
    os.makedirs(os.path.dirname(host / configfile), exist_ok=True)
    with open(host / configfile, "w") as handle:
        yaml.safe_dump(config, handle)
    (host / "Snakefile").write_text(
        snippet.replace(PLACEHOLDER, os.path.join(REPO, "workflow", "Snakefile")))

    result = snakemake(str(host), "--cores", "2")
    output = result.stdout + result.stderr
    for rule in ("gpualign_split_genome", "gpualign_pairwise_shard", "gpualign_merge_pairwise",
                 "gpualign_search_shard", "gpualign_merge_search"):
        assert rule in output, rule
    for target in targets:
        assert os.path.getsize(host / target) > 0, target
    # The host's `all` was the default target, not the imported one (which wants the report).
    assert not os.path.exists(host / "results" / "report" / "throughput.html")
    snakemake(str(host), "--report", "report.html")
    assert os.path.getsize(host / "report.html") > 0
    result = snakemake(str(host), "-n")
    assert "Nothing to be done" in result.stdout + result.stderr
