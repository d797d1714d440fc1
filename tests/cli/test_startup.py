"""Start-up cost: a command imports only what it runs; the package facade loads names on use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpualign_plugin.cli.main import SUBCOMMANDS, build_parser, chosen_subcommand, main


@pytest.mark.parametrize("argv, expected", [
    (["search", "-q", "a.fa"], "search"),
    (["-v", "--local-gpus", "2", "--gpu-lock-dir", "d", "merge-hits", "x.hits"], "merge_hits"),
    (["genome-summary", "-h"], "compare"),
    (["--help"], None),
    ([], None),
    (["nosuch", "search"], None),
])
def test_the_subcommand_is_found_before_parsing(argv, expected):
    assert chosen_subcommand(argv) == expected


def test_a_parser_of_one_subcommand_parses_like_the_full_one():
    argv = ["search", "-q", "q.fa", "-d", "db.fa", "--out-blast", "o.m8", "--top", "3"]
    one = vars(build_parser("search").parse_args(argv))
    full = vars(build_parser().parse_args(argv))
    assert one == full
    assert set(SUBCOMMANDS) >= {chosen_subcommand([name.replace("_", "-")]) for name in SUBCOMMANDS}


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_the_search_command_imports_no_other_problem_and_no_numba_at_start():
    loaded = _modules_after("from gpualign_plugin.cli.main import build_parser; "
                            "build_parser('search').parse_args(['search', '-q', 'q', '-d', 'd'])")
    others = {name for name in loaded if name.split(".")[:2] in (
        ["gpualign_plugin", "syntenic"], ["gpualign_plugin", "align3"], ["gpualign_plugin", "fold"],
        ["gpualign_plugin", "compare"])}
    assert others == set()
    assert "numba" not in loaded and "scipy" not in loaded


def test_the_facade_loads_each_public_name_on_use_and_keeps_functions_over_subpackages():
    loaded = _modules_after("import gpualign_plugin")
    assert "numba" not in loaded and "gpualign_plugin.search.api" not in loaded
    code = ("import gpualign_plugin.search.api, gpualign_plugin.fold.api\n"
            "import gpualign_plugin as g\n"
            "from gpualign_plugin import fold\n"
            "assert g.search is __import__('sys').modules['gpualign_plugin.search.api'].search\n"
            "assert fold is __import__('sys').modules['gpualign_plugin.fold.api'].fold\n"
            "missing = [n for n in g.__all__ if not hasattr(g, n)]\n"
            "assert missing == [], missing\n"
            "assert set(g.__all__) <= set(dir(g))\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_command_leaves_at_once_with_its_output_and_status(tmp_path):
    """``python -m gpualign_plugin.cli.main`` ends through os._exit: output files complete,
    log lines and error messages on a piped stderr, the exit status kept."""
    from paths import REPO

    query = os.path.join(REPO, "resources", "proteins", "queries.fa")
    db = os.path.join(REPO, "resources", "proteins", "database.fa")
    command = [sys.executable, "-m", "gpualign_plugin.cli.main", "search", "-q", query, "-d", db,
               "--backend", "cpu", "--out-blast", str(tmp_path / "o.m8")]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0 and "hits of" in done.stderr
    assert main(["search", "-q", query, "-d", db, "--backend", "cpu",
                 "--out-blast", str(tmp_path / "in-process.m8")]) == 0
    assert (tmp_path / "o.m8").read_bytes() == (tmp_path / "in-process.m8").read_bytes()
    failed = subprocess.run(command[:-1] + [str(tmp_path / "x.m8"), "--top", "0"], capture_output=True,
                            text=True)
    assert failed.returncode == 2 and failed.stderr.strip().endswith("--top must be 1 or more, got 0")
