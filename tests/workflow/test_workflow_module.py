"""Reuse: a host workflow made of the documented module snippet, as written, runs our rules.

The snippet is read from README.md and docs/WORKFLOW.md (only the Snakefile path is filled
in); its config is the `.test/` scenario with the query genome named as the snippet's targets
name it.
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


def module_snippet(document: str = "README.md") -> str:
    """The Python block of ``document`` (relative to the repository) that imports the workflow."""
    with open(os.path.join(REPO, document), encoding="utf-8") as handle:
        text = handle.read()
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S)
    snippets = [re.sub(rf"^{indent}", "", body, flags=re.M) for indent, body in blocks
                if "module gpualign:" in body]
    assert len(snippets) == 1, f"{document} should hold one module snippet"
    return snippets[0]


def host_workflow(host, snippet: str) -> list[str]:
    """Write the host workflow of ``snippet`` and its data and config into ``host``.

    Returns the targets of the host's ``rule all``.
    """
    assert PLACEHOLDER in snippet
    targets = re.findall(r'^\s+"(results/[^"]+)",$', snippet, re.M)
    assert "results/pairwise/strainA.bam" in targets, targets
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
    return targets


@pytest.mark.parametrize("document", ["README.md", "docs/WORKFLOW.md"])
def test_documented_module_snippet_keeps_the_hosts_all_the_default(tmp_path, document):
    host_workflow(tmp_path / "host", module_snippet(document))
    result = snakemake(str(tmp_path / "host"), "-n")
    output = result.stdout + result.stderr
    assert "gpualign_merge_pairwise" in output
    # The imported `all` (default_target in our Snakefile) wants the report: not planned.
    assert "gpualign_all" not in output and "gpualign_report_" not in output


def test_readme_module_snippet_runs_the_hosts_targets_only(tmp_path):
    host = tmp_path / "host"
    targets = host_workflow(host, module_snippet())

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
