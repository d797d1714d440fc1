"""``gpualign bench`` runs every task and reports measured rows (speed itself is never asserted)."""

import math

import pytest

from gpualign_plugin.cli.main import main


def test_bench_measures_every_cpu_task_and_describes_the_machine(capsys, data_dir):
    globins = f"{data_dir}/globins.fasta"
    status = main(["bench", "--backend", "cpu", "--tasks", "score,align,batch,syntenic,align3,fold,search",
                   "--sizes", "300x400", "--batch", "8x64", "--align3-length", "20", "--fold-length", "60",
                   "--fold-many", "3x40", "--search-query", globins, "--search-db", globins, "--repeat", "1"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith("# machine:") and "CPU:" in out.splitlines()[0]
    header = next(line for line in out.splitlines() if line.startswith("task "))
    start, end = header.index("seconds"), header.index("Gcells/s")
    for task in ("score", "align", "batch+traceback", "syntenic score", "align3 (full)", "fold (Nussinov)",
                 "search (top 10, aligned)"):
        row = next(line for line in out.splitlines() if line.startswith(task + " "))
        seconds = float(row[start:end])
        assert seconds > 0 and math.isfinite(seconds)


def test_placement_row_places_the_contigs_of_a_simulated_strain(capsys):
    assert main(["bench", "--backend", "cpu", "--tasks", "placement", "--placement", "3x8000",
                 "--repeat", "1"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("placement "))
    assert "3 primary" in row and "of 4 contigs" in row and "8000" in row  # one unrelated, unmapped


def test_bench_skips_cpu_rows_over_the_cell_limit_and_says_so(capsys):
    assert main(["bench", "--backend", "cpu", "--tasks", "score", "--sizes", "1000x1000",
                 "--cpu-max-cells", "1000", "--repeat", "1"]) == 0
    assert "skipped (> --cpu-max-cells" in capsys.readouterr().out


def test_score_and_alignment_rows_report_the_same_optimum(capsys):
    assert main(["bench", "--backend", "cpu", "--tasks", "score,align", "--sizes", "500x500",
                 "--repeat", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith(("score  cpu", "align  cpu"))]
    summaries = [line[line.index("score ", 5):].split(" cigar")[0] for line in rows]
    assert len(rows) == 2 and summaries[0] == summaries[1]


@pytest.mark.parametrize("mode", ["local", "global", "semiglobal"])
def test_parasail_rows_follow_the_cpu_score_row_with_the_same_score(capsys, mode):
    pytest.importorskip("parasail", reason="parasail is a test dependency (pip install -e .[test])")
    assert main(["bench", "--backend", "cpu", "--tasks", "score", "--sizes", "700x600",
                 "--mode", mode, "--repeat", "2"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("score ")]
    name = {"local": "sw", "global": "nw", "semiglobal": "sg_dx"}[mode]
    assert [row[1:3] for row in rows] == [["cpu,", "1"], ["parasail", f"{name}_striped_16,"],
                                          ["parasail", f"{name}_striped_32,"]]
    ours = rows[0][rows[0].index("score", 1) + 1]
    for row in rows[1:]:
        assert row[-1] == "yes" and row[row.index("score", 1) + 1] == ours


def test_cpu_threads_tile_the_score_row_and_the_row_says_so(capsys, monkeypatch):
    import numba

    from gpualign_plugin.pairwise import cpu

    # Two threads run one pair on one core (the striped kernel beats two tiled threads) ...
    assert main(["bench", "--backend", "cpu", "--tasks", "score", "--sizes", "8000x8000",
                 "--cpu-threads", "2", "--repeat", "1"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("score  cpu"))
    assert row.split()[1:3] == ["cpu,", "1"]
    # ... unless the tiled kernel is allowed from two threads.
    monkeypatch.setattr(cpu, "TILED_MIN_THREADS", 2)
    assert main(["bench", "--backend", "cpu", "--tasks", "score,align", "--sizes", "8000x8000",
                 "--cpu-threads", "2", "--repeat", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith(("score  cpu", "align  cpu"))]
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    assert rows[0].split()[1:3] == ["cpu,", str(threads)] and rows[1].split()[1:3] == ["cpu,", "1"]
    # The tiled score row finds the optimum and end cell of the single-threaded alignment.
    summaries = [line[line.index("score ", 5):].split(" cigar")[0] for line in rows]
    assert summaries[0] == summaries[1]
    assert main(["bench", "--backend", "cpu", "--tasks", "score", "--cpu-threads", "-1"]) == 2


def test_rearranged_pair_has_an_inversion_and_a_transposition_of_the_related_pair():
    # Without substitutions and indels the query is the target with its blocks rearranged: the
    # CPU engine's best local alignment on the plus strand covers less than the whole, and the
    # reverse complement of the query holds an exact copy of the inverted block.
    import numpy as np

    from gpualign_plugin.cli.bench import rearranged_pair, related_pair
    from gpualign_plugin.pairwise import cpu
    from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes

    query, target = rearranged_pair(20_000, 0.0, 5, rearrangements=2)
    plain, same_target = related_pair(20_000, 20_000, 0.0, 5)
    assert len(query) == 20_000 and np.array_equal(target, same_target) and np.array_equal(plain, target)
    scheme = ScoringScheme.dna(match=1, mismatch=-3, gap_open=3, gap_extend=2)
    plus = cpu.score_pair(query, target, scheme, "local")
    minus = cpu.score_pair(reverse_complement_codes(query), target, scheme, "local")
    assert plus.score < 19_000  # the rearrangements break the whole-length alignment
    assert 200 <= minus.score <= 1_000  # the inverted block: 1-5% of 20 kbp, copied exactly
