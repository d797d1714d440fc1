"""The GPU alignment under a memory budget: the same alignment, byte for byte, at every plan.

A small ``memory_budget`` (or forced checkpoint levels) makes the engine sweep the chunks
the path crosses again with finer checkpoints, level after level, before re-solving the
finest chunks with direction bytes. Whatever the plan, the alignment must equal the one
without a budget and the CPU engine's; the GPU memory CuPy's pool takes while it runs must
stay within the budget, and the arrays in use within the plan's formula. A budget too
small for any plan stops the CLI with exit 2 and the smallest budget that works.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from test_pairwise_cpu import check_alignment, random_case

from gpualign_plugin.cli.bench import related_pair
from gpualign_plugin.cli.main import main
from gpualign_plugin.pairwise import cpu
from gpualign_plugin.pairwise.modes import MODES
from gpualign_plugin.scoring import ScoringScheme

pytestmark = pytest.mark.gpu

SCHEME = ScoringScheme.dna(match=1, mismatch=-3, gap_open=3, gap_extend=2)
MiB = 2**20


def gpu():
    from gpualign_plugin.pairwise import gpu as pairwise

    return pairwise


class PoolPeak:
    """Highest bytes CuPy's default pool held (``total``) and had in use (``used``) while active."""

    def __enter__(self):
        import cupy
        from cupy.cuda import memory_hook

        self.pool = cupy.get_default_memory_pool()
        self.pool.free_all_blocks()
        self.base_total, self.base_used = self.pool.total_bytes(), self.pool.used_bytes()
        self.total = self.used = 0
        peak = self

        class Hook(memory_hook.MemoryHook):
            name = "gpualign-peak"

            def malloc_postprocess(self, **kwargs):
                peak.total = max(peak.total, peak.pool.total_bytes() - peak.base_total)
                peak.used = max(peak.used, peak.pool.used_bytes() - peak.base_used)

        self.hook = Hook()
        self.hook.__enter__()
        return self

    def __exit__(self, *exc):
        self.hook.__exit__(*exc)


@pytest.mark.parametrize("mode", MODES)
def test_small_budget_gives_the_unbounded_and_the_cpu_alignment(mode):
    q, t = related_pair(30_000, 24_000, 0.03, 21)
    expected = cpu.align_pair(q, t, SCHEME, mode)
    assert gpu().align_pair(q, t, SCHEME, mode) == expected
    budget = 12 * MiB
    profile: dict = {}
    with PoolPeak() as peak:
        got = gpu().align_pair(q, t, SCHEME, mode, memory_budget=budget, profile=profile)
    assert got == expected, (str(got.cigar)[:200], str(expected.cigar)[:200])
    assert len(profile["intervals"]) >= 2 and profile["region_sweeps"] > 0
    assert peak.used <= profile["planned_bytes"] <= budget
    assert peak.total <= budget


def test_a_budget_holds_after_an_unlimited_alignment_left_its_blocks_cached():
    # CuPy counts the pool's cached free blocks against its limit and does not release them when
    # an allocation would pass it: the hundreds of MiB an unlimited alignment leaves cached must
    # not eat a later alignment's budget (the chunk re-solves allocate on streams of their own).
    import cupy

    q, t = related_pair(40_000, 40_000, 0.02, 7)
    expected = gpu().align_pair(q, t, SCHEME, "local")
    pool = cupy.get_default_memory_pool()
    assert pool.free_bytes() > 24 * MiB  # cached, not in use: more than the budget below
    profile: dict = {}
    assert gpu().align_pair(q, t, SCHEME, "local", memory_budget=24 * MiB, profile=profile) == expected
    assert profile["planned_bytes"] <= 24 * MiB and pool.get_limit() == 0


@pytest.mark.parametrize("mode", MODES)
def test_forced_levels_on_random_pairs_equal_cpu(mode):
    # Three levels of checkpoints (1024, 256, 64) on pairs of a few thousand letters: paths cross
    # many regions of every level; DNA and protein, repeats and unrelated pairs included.
    rng = np.random.default_rng(31 + MODES.index(mode))
    for case in range(40):
        scheme, q, t = random_case(rng, 3000 if case % 4 else 600)
        expected = cpu.align_pair(q, t, scheme, mode)
        got = gpu().align_pair(q, t, scheme, mode, intervals=(1024, 256, 64))
        assert got == expected, (case, str(got.cigar), str(expected.cigar))
        if got.score or mode != "local":
            check_alignment(got, q, t, scheme, mode)


def test_two_levels_on_a_100kbp_pair_equal_one_level():
    q, t = related_pair(100_000, 100_000, 0.02, 22)
    one = gpu().align_pair(q, t, SCHEME, "global")
    assert gpu().align_pair(q, t, SCHEME, "global", intervals=(16384, 1024)) == one
    assert gpu().align_pair(q, t, SCHEME, "global", intervals=(32768, 4096, 512)) == one


def test_cli_budget_too_small_exits_2_naming_the_smallest_that_works(tmp_path, capsys):
    q, t = related_pair(20_000, 20_000, 0.02, 23)
    letters = np.array(list("ACGT"))
    query, target = tmp_path / "q.fa", tmp_path / "t.fa"
    query.write_text(">q\n" + "".join(letters[q]) + "\n")
    target.write_text(">t\n" + "".join(letters[t]) + "\n")
    base = ["pairwise", "-q", str(query), "-t", str(target), "--strand", "plus", "--match", "1",
            "--mismatch", "-3", "--gap-open", "3", "--gap-extend", "2"]
    out = tmp_path / "small.paf"
    assert main(base + ["--out", str(out), "--backend", "gpu", "--gpu-memory", "1M"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "budget is 1 MiB" in err[0] and not out.exists()
    needed = re.search(r"--gpu-memory (\d+M)", err[0]).group(1)
    stats = tmp_path / "stats.json"
    assert main(base + ["--out", str(out), "--backend", "gpu", "--gpu-memory", needed,
                        "--stats", str(stats)]) == 0
    assert main(base + ["--out", str(tmp_path / "cpu.paf"), "--backend", "cpu"]) == 0
    assert out.read_text() == (tmp_path / "cpu.paf").read_text()
    import json

    gpu_phases = json.loads(stats.read_text())["extra"]["gpu_phases"]
    assert gpu_phases["pairs"] >= 1 and gpu_phases["score_pass_s"] > 0


def _rc(codes):
    return (3 - codes)[::-1].copy()


@functools.lru_cache(maxsize=None)
def _rearranged_contig_case():
    """A 40 kbp contig of three pieces of a 60 kbp target (forward, inverted, forward), encoded,
    and its CPU placement (computed once for both budgets)."""
    from gpualign_plugin.pairwise.placement import place_local

    q, t = related_pair(60_000, 60_000, 0.02, 25)
    query = np.concatenate([q[5_000:20_000], _rc(q[30_000:42_000]), q[45_000:58_000]])
    letters = np.array(list("ACGT"))
    queries = [SCHEME.encode("contig", "".join(letters[query]))]
    targets = [SCHEME.encode("chr", "".join(letters[t]))]
    return queries, targets, place_local(queries, targets, SCHEME, backend="cpu")


@pytest.mark.parametrize("budget", [None, 48 * MiB])
def test_local_placement_on_one_target_reuses_the_score_pass_and_equals_the_cpu(budget):
    # One target, both strands: the GPU keeps each candidate's score pass and aligns from it.
    from gpualign_plugin.pairwise.placement import place_local

    queries, targets, expected = _rearranged_contig_case()
    profile: dict = {}
    got = place_local(queries, targets, SCHEME, backend="gpu", gpu_memory=budget, gpu_profile=profile)
    assert got == expected
    pieces = sorted((a.query_start, a.strand) for a in got if a.is_primary)
    assert [strand for _, strand in pieces] == ["+", "-", "+"]
    assert profile["kept_hits"] >= 3
