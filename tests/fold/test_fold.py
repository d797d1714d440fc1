"""RNA folding: plain-Python Nussinov oracle, legal structures, the traceback rule, the CLI."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpualign_plugin.cli.main import main
from gpualign_plugin.errors import InputError
from gpualign_plugin.fold.api import encode_rna, fold, fold_cells

from oracles import RNA_PAIRS as PAIRS
from oracles import nussinov, traceback_by_rule


def check_structure(result, text, min_loop):
    s = text.upper().replace("T", "U")
    assert len(result.structure) == len(s)
    opened = []
    from_brackets = []
    for position, char in enumerate(result.structure):
        if char == "(":
            opened.append(position)
        elif char == ")":
            from_brackets.append((opened.pop(), position))
        else:
            assert char == "."
    assert not opened
    assert tuple(sorted(from_brackets)) == result.pairs
    for i, j in result.pairs:
        assert (s[i], s[j]) in PAIRS
        assert j - i - 1 >= min_loop
    assert len(result.pairs) == result.score


def check_random_folds_against_the_oracle(seed, letters, cases, loops):
    """Random texts over ``letters`` (1-40 nt, min_loop cycling through ``loops`` values): score,
    structure and pairs as the plain-Python oracle and the written traceback give them."""
    rng = random.Random(seed)
    for case in range(cases):
        text = "".join(rng.choice(letters) for _ in range(rng.randint(1, 40)))
        min_loop = case % loops
        result = fold(text, min_loop)
        expected = nussinov(text, min_loop)
        assert result.score == (expected[0][len(text) - 1] if len(text) > 1 else 0)
        check_structure(result, text, min_loop)
        assert result.pairs == traceback_by_rule(text, min_loop)


def test_scores_equal_plain_python_nussinov():
    check_random_folds_against_the_oracle(1, "ACGUacgT", 150, 5)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="GCU", min_size=1, max_size=30), st.integers(min_value=0, max_value=3))
def test_many_ties_follow_the_written_traceback(text, min_loop):
    result = fold(text, min_loop)
    check_structure(result, text, min_loop)
    assert result.pairs == traceback_by_rule(text, min_loop)


def test_longer_than_several_blocks():
    rng = random.Random(3)
    text = "".join(rng.choice("ACGU") for _ in range(200))
    result = fold(text, 3)
    assert result.score == nussinov(text, 3)[0][199]
    check_structure(result, text, 3)


def test_min_loop_is_respected_and_zero_lets_neighbours_pair():
    assert fold("GC", 0).structure == "()"
    assert fold("GC", 1).structure == ".."
    assert fold("GGGAAAUCC", 3).structure == "(((...)))"
    assert fold("GGGAUCC", 3).score == 2


def test_t_reads_as_u_and_case_is_ignored():
    assert fold("ggtacc").score == fold("GGUACC").score == 3


def test_n_and_ambiguity_codes_are_bases_that_pair_with_nothing():
    """As RNAfold reads them: the fold equals the oracle's, in which they pair with nothing."""
    check_random_folds_against_the_oracle(5, "ACGUNNrykmswbdhv", 120, 4)
    assert fold("GGGNNNNCCC", 3).structure == "(((....)))"
    assert fold("NNNNNN").structure == "......"
    assert fold("GGGAAACCC").score == fold("GGGANACCC").score == 3


def test_other_characters_are_errors_with_position():
    with pytest.raises(InputError, match=r"record 'r1': position 4: character 'X'"):
        encode_rna("ACGXA", path="x.fa", record="r1")
    with pytest.raises(InputError, match=r"position 3: character '-'"):
        encode_rna("AC-GU")
    with pytest.raises(InputError, match="min-loop"):
        fold("ACGU", -1)


@pytest.mark.parametrize("length", [1, 4, 63, 64, 65, 200])
def test_progress_adds_up_to_the_split_point_count(length):
    assert fold_cells(length) == sum(j - i for i in range(length) for j in range(i + 1, length))
    reported = []
    fold("GC" * (length // 2) + "A" * (length % 2), progress=reported.append)
    assert sum(reported) == fold_cells(length)


@pytest.mark.parametrize("length", [1, 2, 3, 62, 63, 64, 65, 127, 128, 129, 300])
def test_gpu_tile_diagonal_updates_add_up_to_the_split_point_count(length):
    """The GPU engine's progress unit (a tile diagonal), by formula, against counting the cells:
    W(i, j) = N(i, j - 1) tries j - i - 1 split points, tile (I, J) is 64 x 64."""
    from gpualign_plugin.fold.gpu import TILE, diagonal_updates

    sides = (length + TILE) // TILE
    for d in range(sides):
        counted = sum(j - i - 1 for i in range(length + 1) for j in range(i + 2, length + 1)
                      if j // TILE - i // TILE == d)
        assert diagonal_updates([length], d) == counted
    assert sum(diagonal_updates([length, 7], d) for d in range(sides)) == fold_cells(length) + fold_cells(7)


def test_cli_writes_rnafold_layout(tmp_path):
    fasta = tmp_path / "in.fa"
    fasta.write_text(">r1 some tRNA\nGGGAAAUCC\n>r2\ngggaaaucc\n")
    out = tmp_path / "out.dbn"
    assert main(["fold", "--input", str(fasta), "--out", str(out), "--min-loop", "3"]) == 0
    assert out.read_text() == ">r1\nGGGAAAUCC\n(((...))) (3)\n>r2\ngggaaaucc\n(((...))) (3)\n"


def test_cli_bad_base_exits_2_without_output(tmp_path, capsys):
    fasta = tmp_path / "in.fa"
    fasta.write_text(">r1\nGGGAAAUCC\n>r2\nGGGAXAUCC\n")
    out = tmp_path / "out.dbn"
    assert main(["fold", "--input", str(fasta), "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert "in.fa: record 'r2': position 5:" in error and "\n" not in error
    assert not out.exists()


def test_serial_and_parallel_fills_agree():
    import numba

    rng = random.Random(8)
    text = "".join(rng.choice("ACGU") for _ in range(400))
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        results.append(fold(text, 2))
    assert results[0] == results[1]


def test_cli_gpu_backend_without_a_gpu_exits_2_with_one_line(tmp_path, capsys):
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    fasta = tmp_path / "in.fa"
    fasta.write_text(">r1\nGGGAAAUCC\n")
    out = tmp_path / "out.dbn"
    assert main(["fold", "--input", str(fasta), "--out", str(out), "--backend", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--backend gpu" in err[0]
    assert not out.exists()
