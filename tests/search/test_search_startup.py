"""A GPU search reaches the device without importing Numba (docs/GPU.md, "Start-up").

Numba's import and first call cost about a second of CPU time; a GPU search of a prepared
database loads none (its top hits are packed with NumPy and aligned on the device:
tests/search/test_search_gpu.py runs the whole command). These tests run the host steps of a
GPU search up to the scan in a fresh interpreter and check which modules it loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpualign_plugin.cli.main import main

from paths import DATA

QUERIES = os.path.join(DATA, "search_queries.fa")
DB = os.path.join(DATA, "search_db.fa")

HOST_STEPS = """
import sys
from gpualign_plugin.cli.common import apply_threads
from gpualign_plugin.cli.search import run
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.pairwise.api import gpu_accepts
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.search import gpu
from gpualign_plugin.search.api import search_stream, statistics_of
from gpualign_plugin.search.database import load_database

scheme = ScoringScheme.from_matrix("BLOSUM62")
threads = apply_threads({threads})
queries = read_fasta({queries!r}, scheme)
database = load_database({db!r}, scheme)
lengths = [len(q) for q in queries]
plan = gpu.plan_items(lengths, database.lengths[:64], 10**6 if gpu_accepts(scheme) else None)
print(threads, len(queries), len(database.names), sum(len(part) for part in plan))
print("numba" in sys.modules, __import__("os").environ.get("NUMBA_NUM_THREADS"))
"""


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> str:
    """The search fixture's database, prepared with ``gpualign makedb``."""
    path = tmp_path_factory.mktemp("startup") / "db.gadb"
    assert main(["makedb", "--db", DB, "--out", str(path)]) == 0
    return str(path)


def _host_steps(db: str, threads: int) -> list[str]:
    code = HOST_STEPS.format(queries=QUERIES, db=db, threads=threads)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return done.stdout.split("\n")


def test_a_gpu_search_reads_its_inputs_and_plans_its_scan_without_numba(prepared):
    sizes, loaded = _host_steps(prepared, 1)[:2]
    threads, queries, records, items = (int(v) for v in sizes.split())
    assert (threads, queries, records) == (1, 4, 50)
    assert items > 0
    # --threads goes to Numba's pool size, set before Numba loads
    assert loaded == "False 1"


def test_before_numba_loads_all_cores_are_those_the_process_may_use(prepared):
    sizes, loaded = _host_steps(prepared, 0)[:2]
    assert int(sizes.split()[0]) == len(os.sched_getaffinity(0))
    assert loaded == f"False {len(os.sched_getaffinity(0))}"
