"""Syntenic alignment: engine against an independent plain-Python DP, score invariants, outputs, CLI."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import biopython_aligner, gotoh

from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Cigar, score_cigar
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.syntenic.api import (default_block_penalty, syntenic, syntenic_align,
                                          syntenic_score)

NEG = float("-inf")


def oracle(a, b, matrix, o, e, d):
    """Syntenic alignment by docs/ALGORITHMS.md ("Syntenic") literally: full matrices, value-based traceback.

    Returns ``(score, regions)`` with regions as
    ``(kind, query_start, query_end, target_start, target_end, cigar, score)``.
    """
    a = [int(x) for x in a]
    b = [int(x) for x in b]
    m, n = len(a), len(b)
    S = [[NEG] * (n + 1) for _ in range(m + 1)]
    D = [[NEG] * (n + 1) for _ in range(m + 1)]
    I = [[NEG] * (n + 1) for _ in range(m + 1)]
    H = [[NEG] * (n + 1) for _ in range(m + 1)]
    for i in range(m + 1):
        for j in range(n + 1):
            if i == 0 and j == 0:
                S[0][0] = 0
                continue
            if i > 0:
                I[i][j] = max(S[i - 1][j] - o - e, I[i - 1][j] - e)
            if j > 0:
                D[i][j] = max(S[i][j - 1] - o - e, D[i][j - 1] - e)
            candidates = []
            if i > 0:
                candidates += [S[i - 1][j] - d, H[i - 1][j]]
            if j > 0:
                candidates += [S[i][j - 1] - d, H[i][j - 1]]
            H[i][j] = max(candidates)
            diag = S[i - 1][j - 1] + matrix[a[i - 1]][b[j - 1]] if i > 0 and j > 0 else NEG
            S[i][j] = max(diag, D[i][j], I[i][j], H[i][j])
    # Traceback from (m, n) in state S; columns collected end to start.
    path = []  # ('=', 'X', 'I', 'D') or ('B', opens) per step
    i, j, state = m, n, "S"
    while not (state == "S" and i == 0 and j == 0):
        if state == "S":
            if i > 0 and j > 0 and S[i][j] == S[i - 1][j - 1] + matrix[a[i - 1]][b[j - 1]]:
                path.append("=" if a[i - 1] == b[j - 1] else "X")
                i, j = i - 1, j - 1
            elif S[i][j] == D[i][j]:
                state = "D"
            elif S[i][j] == I[i][j]:
                state = "I"
            else:
                state = "H"
        elif state == "D":
            path.append("D")
            if D[i][j] == S[i][j - 1] - o - e:
                state = "S"
            j -= 1
        elif state == "I":
            path.append("I")
            if I[i][j] == S[i - 1][j] - o - e:
                state = "S"
            i -= 1
        else:
            if i > 0 and H[i][j] == S[i - 1][j] - d:
                path.append(("up", True))
                state, i = "S", i - 1
            elif j > 0 and H[i][j] == S[i][j - 1] - d:
                path.append(("left", True))
                state, j = "S", j - 1
            elif i > 0 and H[i][j] == H[i - 1][j]:
                path.append(("up", False))
                i -= 1
            else:
                path.append(("left", False))
                j -= 1
    path.reverse()
    regions = []
    i = j = 0
    k = 0
    while k < len(path):
        si, sj = i, j
        if isinstance(path[k], tuple):
            first = True
            while k < len(path) and isinstance(path[k], tuple) and (first or not path[k][1]):
                first = False
                if path[k][0] == "up":
                    i += 1
                else:
                    j += 1
                k += 1
            regions.append(("difference", si, i, sj, j, "*", -d))
            continue
        ops = ""
        score = 0
        gap = None
        while k < len(path) and not isinstance(path[k], tuple):
            op = path[k]
            ops += op
            if op in "=X":
                score += matrix[a[i]][b[j]]
                i, j = i + 1, j + 1
                gap = None
            else:
                score -= e + (o if gap != op else 0)
                gap = op
                if op == "I":
                    i += 1
                else:
                    j += 1
            k += 1
        regions.append(("match", si, i, sj, j, str(Cigar.from_ops(ops)), score))
    return int(S[m][n]), regions


def as_tuples(result):
    return [(b.kind, b.query_start, b.query_end, b.target_start, b.target_end, str(b.cigar), b.score)
            for b in result.blocks]


def random_pair(rng, letters, max_length):
    """Two related sequences over ``letters`` (small alphabets give many ties)."""
    m = int(rng.integers(1, max_length + 1))
    a = rng.integers(0, letters, m)
    b = a.copy()
    # Mutate, delete and insert pieces so that both related and unrelated stretches occur.
    for _ in range(int(rng.integers(0, 4))):
        kind = rng.integers(0, 3)
        pos = int(rng.integers(0, len(b) + 1))
        size = int(rng.integers(1, 15))
        if kind == 0:
            b = np.concatenate([b[:pos], rng.integers(0, letters, size), b[pos + size:]])
        elif kind == 1:
            b = np.concatenate([b[:pos], b[pos + size:]])
        else:
            b = np.concatenate([b[:pos], rng.integers(0, letters, size), b[pos:]])
    if len(b) == 0 or len(b) > max_length:
        b = rng.integers(0, letters, int(rng.integers(1, max_length + 1)))
    return a.astype(np.uint8), b.astype(np.uint8)


SCHEMES = [ScoringScheme.dna(), ScoringScheme.dna(1, -1, 0, 1), ScoringScheme.dna(2, -1, 3, 1),
           ScoringScheme.dna(1, -2, 1, 2)]


@pytest.mark.parametrize("seed", range(12))
def test_engine_equals_plain_python_dp_and_checkpointed_equals_full(seed):
    rng = np.random.default_rng(seed)
    for case in range(25):
        scheme = SCHEMES[case % len(SCHEMES)]
        d = int(rng.choice([1, 2, 4, 7, 12, 25]))
        a, b = random_pair(rng, int(rng.choice([2, 4])), 60)
        expected_score, expected_regions = oracle(a, b, scheme.matrix, scheme.gap_open,
                                                  scheme.gap_extend, d)
        full = syntenic_align(a, b, scheme, d)
        assert full.score == expected_score
        assert as_tuples(full) == expected_regions
        assert syntenic_score(a, b, scheme, d) == expected_score
        assert full.recompute_score(a, b, scheme) == expected_score
        for budget in (1, 150, 1500):
            assert syntenic_align(a, b, scheme, d, memory_budget=budget) == full


def test_tiny_binary_pairs_follow_every_tie_rule():
    # Short two-letter sequences with small block penalties tie often between all
    # nine traceback choices; each rule of the written priority order changes some
    # of these paths if altered.
    rng = np.random.default_rng(2024)
    schemes = SCHEMES + [ScoringScheme.dna(1, -1, 1, 1)]
    for case in range(2500):
        scheme = schemes[case % len(schemes)]
        a = rng.integers(0, 2, int(rng.integers(1, 9))).astype(np.uint8)
        b = rng.integers(0, 2, int(rng.integers(1, 9))).astype(np.uint8)
        d = int(rng.integers(1, 8))
        expected_score, expected_regions = oracle(a, b, scheme.matrix, scheme.gap_open,
                                                  scheme.gap_extend, d)
        result = syntenic_align(a, b, scheme, d, memory_budget=1 if case % 2 else 2**20)
        assert result.score == expected_score
        assert as_tuples(result) == expected_regions


def test_protein_matrix_against_plain_python_dp():
    scheme = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
    rng = np.random.default_rng(99)
    for _ in range(30):
        a, b = random_pair(rng, 20, 40)
        expected_score, expected_regions = oracle(a, b, scheme.matrix, 11, 1, 15)
        result = syntenic_align(a, b, scheme, 15, memory_budget=64)
        assert result.score == expected_score
        assert as_tuples(result) == expected_regions


def test_longer_pairs_checkpointed_equal_full_and_score_only():
    scheme = ScoringScheme.dna()
    rng = np.random.default_rng(7)
    for _ in range(6):
        a, b = random_pair(rng, 4, 400)
        full = syntenic_align(a, b, scheme, 20)
        assert syntenic_align(a, b, scheme, 20, memory_budget=1) == full
        assert syntenic_align(a, b, scheme, 20, memory_budget=4000) == full
        assert syntenic_score(a, b, scheme, 20) == full.score == syntenic_score(b, a, scheme, 20)
        assert full.recompute_score(a, b, scheme) == full.score


def test_very_large_block_penalty_gives_the_global_alignment():
    rng = np.random.default_rng(3)
    scheme = ScoringScheme.dna()
    aligner = biopython_aligner(scheme, "global")
    letters = scheme.alphabet.letters
    for _ in range(40):
        a, b = random_pair(rng, 4, 60)
        result = syntenic_align(a, b, scheme, 10**6)
        global_score = aligner.score("".join(letters[x] for x in b), "".join(letters[x] for x in a))
        assert result.score == global_score
        score, _, _, _, _, cigar = gotoh(a, b, scheme.matrix, scheme.gap_open, scheme.gap_extend,
                                         "global")
        assert [(blk.kind, str(blk.cigar)) for blk in result.blocks] == [("match", cigar)]
        assert score == result.score


@settings(max_examples=60, deadline=None)
@given(st.text("ACGT", min_size=1, max_size=50), st.text("ACGT", min_size=1, max_size=50),
       st.integers(1, 40))
def test_blocks_tile_both_sequences_and_recompute_to_the_score(query, target, d):
    scheme = ScoringScheme.dna()
    a = scheme.alphabet.encode(query)
    b = scheme.alphabet.encode(target)
    result = syntenic_align(a, b, scheme, d)
    assert result.recompute_score(a, b, scheme) == result.score
    assert sum(blk.score for blk in result.blocks) == result.score
    kinds = [blk.kind for blk in result.blocks]
    # Two difference blocks never touch: one block covering both would cost d less.
    assert all(not (x == y == "difference") for x, y in zip(kinds, kinds[1:]))


def planted_regions(rng):
    """Query and target codes: three conserved 300 bp regions (5% substituted) between unrelated inserts.

    The regions start at query 0, 420, 800 and target 0, 450, 760.
    """
    def random_dna(size):
        return rng.integers(0, 4, size).astype(np.uint8)

    conserved = [random_dna(300) for _ in range(3)]
    copies = []
    for region in conserved:
        copy = region.copy()
        for pos in rng.choice(len(copy), 15, replace=False):
            copy[pos] = (copy[pos] + 1) % 4
        copies.append(copy)
    inserts_q = [random_dna(120), random_dna(80)]
    inserts_t = [random_dna(150), random_dna(10)]
    query = np.concatenate([conserved[0], inserts_q[0], conserved[1], inserts_q[1], conserved[2]])
    target = np.concatenate([copies[0], inserts_t[0], copies[1], inserts_t[1], copies[2]])
    return query, target


def test_planted_conserved_regions_are_recovered():
    scheme = ScoringScheme.dna()
    query, target = planted_regions(np.random.default_rng(11))
    result = syntenic_align(query, target, scheme, default_block_penalty(scheme))
    regions = result.matching_regions
    assert len(regions) == 3
    assert len(result.difference_blocks) == 2
    q_starts = [0, 420, 800]
    t_starts = [0, 450, 760]
    for region, qs, ts in zip(regions, q_starts, t_starts):
        # Each matching region is its conserved region, give or take a few bases at the edges
        # where the unrelated inserts happen to match by chance.
        assert abs(region.query_start - qs) <= 6 and abs(region.query_end - (qs + 300)) <= 6
        assert abs(region.target_start - ts) <= 6 and abs(region.target_end - (ts + 300)) <= 6
        assert region.identity > 0.9


def test_empty_query_is_one_difference_block_or_one_gap():
    scheme = ScoringScheme.dna()
    b = scheme.alphabet.encode("ACGTACGTAC")
    short = syntenic_align(np.zeros(0, np.uint8), b, scheme, 10)
    assert as_tuples(short) == [("difference", 0, 0, 0, 10, "*", -10)]
    cheap_gap = syntenic_align(np.zeros(0, np.uint8), b, scheme, 100)
    assert as_tuples(cheap_gap) == [("match", 0, 0, 0, 10, "10D", -25)]


def test_record_ids_and_bad_block_penalty():
    scheme = ScoringScheme.dna()
    q = scheme.encode("chr1", "ACGTACGTTT")
    t = scheme.encode("chr1b", "ACGTACGGTT")
    result = syntenic(q, t, scheme, 30)
    assert (result.query_id, result.target_id) == ("chr1", "chr1b")
    with pytest.raises(InputError, match="block penalty"):
        syntenic(q, t, scheme, 0)


# ---------------------------------------------------------------------------------------------
# Command line and output files


def planted_fasta(tmp_path, rng, ids=("chrA", "chrB")):
    """Query and target FASTA sharing three conserved 300 bp regions separated by unrelated inserts."""
    letters = "ACGT"

    def text(size):
        return "".join(letters[x] for x in rng.integers(0, 4, size))

    conserved = [text(300) for _ in range(3)]
    query = conserved[0] + text(150) + conserved[1] + text(90) + conserved[2]
    target = conserved[0] + text(120) + conserved[1] + text(30) + conserved[2]
    q_path, t_path = tmp_path / "q.fa", tmp_path / "t.fa"
    q_path.write_text(f">{ids[0]}\n{query}\n")
    t_path.write_text(f">{ids[1]}\n{target}\n")
    return str(q_path), str(t_path), query, target


def read_table(path):
    with open(path) as handle:
        lines = handle.read().splitlines()
    header = [line for line in lines if line.startswith("#")]
    columns = header[-1][1:].split("\t")
    rows = [dict(zip(columns, line.split("\t"))) for line in lines if not line.startswith("#")]
    return header, rows


def test_cli_writes_every_output_and_they_agree(tmp_path):
    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.paf import read_paf

    q_path, t_path, query, target = planted_fasta(tmp_path, np.random.default_rng(5))
    prefix = tmp_path / "out" / "ab"
    (tmp_path / "out").mkdir()
    assert main(["syntenic", "-q", q_path, "-t", t_path, "--out-prefix", str(prefix),
                 "--stats", str(tmp_path / "stats.json")]) == 0
    scheme = ScoringScheme.dna()
    expected = syntenic(scheme.encode("chrA", query), scheme.encode("chrB", target), scheme,
                        default_block_penalty(scheme))
    header, rows = read_table(f"{prefix}.blocks.tsv")
    assert any("0-based half-open" in line for line in header)
    assert [(r["type"], int(r["query_start"]), int(r["query_end"]), int(r["target_start"]),
             int(r["target_end"]), int(r["score"])) for r in rows] == \
        [(b.kind, b.query_start, b.query_end, b.target_start, b.target_end, b.score)
         for b in expected.blocks]
    assert [r["type"] for r in rows].count("match") == 3
    for side, column in (("query", "query"), ("target", "target")):
        with open(f"{prefix}.{side}.bed") as handle:
            bed = [line.rstrip("\n").split("\t") for line in handle]
        assert all(len(fields) == 6 for fields in bed)
        assert [(int(f[1]), int(f[2])) for f in bed] == \
            [(int(r[f"{column}_start"]), int(r[f"{column}_end"])) for r in rows]
        assert [f[3] for f in bed] == [f"{r['type']}_{r['block']}" for r in rows]
    paf = read_paf(f"{prefix}.paf")
    assert [(p["qstart"], p["qend"], p["tstart"], p["tend"], p["cg"], p["AS"]) for p in paf] == \
        [(b.query_start, b.query_end, b.target_start, b.target_end, str(b.cigar), b.score)
         for b in expected.matching_regions]
    q_codes, t_codes = scheme.alphabet.encode(query), scheme.alphabet.encode(target)
    for p in paf:
        assert score_cigar(Cigar.from_string(p["cg"]), q_codes[p["qstart"]:p["qend"]],
                           t_codes[p["tstart"]:p["tend"]], scheme) == p["AS"]
    with open(f"{prefix}.dotplot.png", "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(tmp_path / "stats.json") > 0


def test_cli_pairs_by_id_and_pairs_file_name_one_dotplot_per_pair(tmp_path):
    from gpualign_plugin.cli.main import main

    rng = np.random.default_rng(8)
    q1, t1, query1, target1 = planted_fasta(tmp_path, rng, ("x1", "x1"))
    query2 = target2 = "ACGTTGCAAC" * 20
    q_path, t_path = tmp_path / "qs.fa", tmp_path / "ts.fa"
    q_path.write_text(f">x1\n{query1}\n>x2\n{query2}\n>lonely\nACGTACGTAC\n")
    t_path.write_text(f">x2\n{target2}\n>x1\n{target1}\n")
    prefix = str(tmp_path / "byid")
    assert main(["syntenic", "-q", str(q_path), "-t", str(t_path), "-o", prefix]) == 0
    assert os.path.exists(f"{prefix}.x1.dotplot.png") and os.path.exists(f"{prefix}.x2.dotplot.png")
    _, rows = read_table(f"{prefix}.blocks.tsv")
    assert {(r["query_id"], r["target_id"]) for r in rows} == {("x1", "x1"), ("x2", "x2")}
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("x2 x2\nx2 x1  # the same query twice\n")
    prefix = str(tmp_path / "listed")
    assert main(["syntenic", "-q", str(q_path), "-t", str(t_path), "-o", prefix,
                 "--pairs", str(pairs), "--threads", "2"]) == 0
    assert os.path.exists(f"{prefix}.x2.x2.dotplot.png") and os.path.exists(f"{prefix}.x2.x1.dotplot.png")


@pytest.mark.parametrize("problem", ["missing_query", "no_common_ids", "bad_pairs_line",
                                     "bad_strand", "minus_protein", "bad_character", "bad_penalty",
                                     "directory_under_a_file"])
def test_cli_bad_input_is_one_line_exit_2_and_no_output(tmp_path, capsys, problem):
    from gpualign_plugin.cli.main import main

    q_path, t_path = tmp_path / "q.fa", tmp_path / "t.fa"
    q_path.write_text(">a\nACGTACGTAC\n>b\nACGTTTGTAC\n")
    t_path.write_text(">c\nACGTACGTAC\n>d\nACGTTTGTAC\n")
    prefix = tmp_path / "out"
    args = ["syntenic", "-q", str(q_path), "-t", str(t_path), "-o", str(prefix)]
    expected = {"missing_query": "no such file", "no_common_ids": "no query record has the id",
                "bad_pairs_line": "line 1",
                "bad_strand": "pairs.txt: line 2: strand 'x' is not '+' or '-'",
                "minus_protein": "pairs.txt: pair a c is listed on the minus strand, which exists only for DNA",
                "bad_character": "position 4",
                "bad_penalty": "--block-penalty",
                "directory_under_a_file": "cannot create the output directory"}[problem]
    if problem == "missing_query":
        args[2] = str(tmp_path / "absent.fa")
    elif problem == "bad_pairs_line":
        (tmp_path / "pairs.txt").write_text("a nothere\n")
        args += ["--pairs", str(tmp_path / "pairs.txt")]
    elif problem == "bad_strand":
        (tmp_path / "pairs.txt").write_text("a c\nb d x\n")
        args += ["--pairs", str(tmp_path / "pairs.txt")]
    elif problem == "minus_protein":
        q_path.write_text(">a\nMKVLAAGIVGLLLAQW\n")
        t_path.write_text(">c\nMKVLSAGIVGLLLAQW\n")
        (tmp_path / "pairs.txt").write_text("a c -\n")
        args += ["--pairs", str(tmp_path / "pairs.txt"), "--matrix", "BLOSUM62"]
    elif problem == "bad_character":
        q_path.write_text(">a\nACG!TACGTA\n")
    elif problem == "bad_penalty":
        args += ["--block-penalty", "0"]
    elif problem == "directory_under_a_file":
        args[6] = str(q_path / "out")
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpualign: error:") and expected in err[0]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("out")]


# ---------------------------------------------------------------------------------------------
# Backends (the GPU engine itself: tests/syntenic/test_syntenic_gpu.py)


def test_gpu_backend_without_a_gpu_exits_2_with_one_line(tmp_path, capsys):
    from gpualign_plugin.cli.main import main
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    q_path, t_path, _, _ = planted_fasta(tmp_path, np.random.default_rng(5))
    prefix = tmp_path / "out"
    assert main(["syntenic", "-q", q_path, "-t", t_path, "-o", str(prefix), "--backend", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpualign: error:") and "--backend gpu" in err[0]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("out")]


def test_auto_backend_falls_back_to_the_cpu_with_the_same_outputs(tmp_path, caplog):
    import json

    from gpualign_plugin.cli.main import main
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    q_path, t_path, _, _ = planted_fasta(tmp_path, np.random.default_rng(5))
    caplog.set_level("INFO", logger="gpualign")
    outputs = {}
    for backend in ("cpu", "auto"):
        prefix = tmp_path / backend
        assert main(["syntenic", "-q", q_path, "-t", t_path, "-o", str(prefix), "--backend", backend,
                     "--stats", str(tmp_path / f"{backend}.json")]) == 0
        with open(f"{prefix}.blocks.tsv") as handle:
            table = [line for line in handle if not line.startswith("# command:")]
        with open(f"{prefix}.paf") as paf, open(f"{prefix}.query.bed") as bed:
            outputs[backend] = (table, paf.read(), bed.read())
        with open(tmp_path / f"{backend}.json") as handle:
            assert json.load(handle)["engine"] == "cpu"
    assert outputs["auto"] == outputs["cpu"]
    assert any("running on the CPU" in r.message for r in caplog.records)


def test_unknown_engine_backend_is_refused():
    scheme = ScoringScheme.dna()
    a = scheme.alphabet.encode("ACGT")
    with pytest.raises(ValueError, match="backend"):
        syntenic_score(a, a, scheme, 10, backend="auto")
    with pytest.raises(ValueError, match="backend"):
        syntenic_align(a, a, scheme, 10, backend="tpu")


def test_cli_a_pair_listed_twice_is_aligned_once(tmp_path):
    # As gpualign pairwise does: before, the repeated line was aligned again and every block
    # table row, BED line and PAF line of the pair was written twice.
    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.paf import read_paf

    q_path, t_path, _, _ = planted_fasta(tmp_path, np.random.default_rng(9), ("x1", "x1"))
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("x1 x1\r\nx1\tx1\n")
    prefix = str(tmp_path / "listed")
    assert main(["syntenic", "-q", str(q_path), "-t", str(t_path), "-o", prefix, "--pairs",
                 str(pairs)]) == 0
    header, rows = read_table(f"{prefix}.blocks.tsv")
    assert sum(line.startswith("# pair x1") for line in header) == 1
    assert [int(r["block"]) for r in rows] == list(range(1, len(rows) + 1))
    assert len(read_paf(f"{prefix}.paf")) == [r["type"] for r in rows].count("match")
    assert os.path.exists(f"{prefix}.dotplot.png")


# ---------------------------------------------------------------------------------------------
# Strand: a contig from the minus strand (tests/syntenic/minus_strand.py, real lambda sequence)


def mirrored_tuples(result):
    """:func:`as_tuples` with the query intervals counted from the other end of the query."""
    m = result.query_length
    return [(kind, m - end, m - start, *rest) for kind, start, end, *rest in as_tuples(result)]


def test_minus_strand_is_the_reverse_complement_aligned_and_reported_on_the_forward_strand():
    from minus_strand import TARGET_ID, contigs

    from gpualign_plugin.scoring import reverse_complement_text

    scheme = ScoringScheme.dna()
    target_text, pieces = contigs()
    target = scheme.encode(TARGET_ID, target_text)
    query = scheme.encode("ctg_minus", pieces["ctg_minus"])
    explicit = syntenic(scheme.encode("ctg_minus", reverse_complement_text(pieces["ctg_minus"])),
                        target, scheme, 50)
    minus = syntenic(query, target, scheme, 50, strand="-")
    assert (minus.strand, explicit.strand) == ("-", "+")
    assert minus.score == explicit.score
    # The same blocks, CIGARs and scores; query intervals mapped to the forward strand.
    assert mirrored_tuples(minus) == as_tuples(explicit)
    m = len(query)
    assert minus.blocks[0].query_end == m and minus.blocks[-1].query_start == 0
    assert all(a.query_start == b.query_end for a, b in zip(minus.blocks, minus.blocks[1:]))
    # Scored again from the forward-strand codes, the CIGARs read the reverse complement.
    assert minus.recompute_score(query.codes, target.codes, scheme) == minus.score
    # The contig is from the minus strand: there all but its 150 bp foreign insertion aligns,
    # at 97% identity or more; on the plus strand (the defect) nothing does.
    assert sum(b.query_span for b in minus.matching_regions) == m - 150
    assert all(b.identity >= 0.97 for b in minus.matching_regions)
    plus = syntenic(query, target, scheme, 50)
    assert plus.strand == "+" and plus.matching_regions == () and plus.score == -50


def test_minus_strand_is_refused_for_protein_and_a_bad_strand_value():
    scheme = ScoringScheme.from_matrix("BLOSUM62")
    record = scheme.encode("p", "MKVLAAGIVGLLLA")
    with pytest.raises(ValueError, match="only for DNA"):
        syntenic(record, record, scheme, 60, strand="-")
    dna = ScoringScheme.dna()
    record = dna.encode("d", "ACGTACGT")
    with pytest.raises(ValueError, match="strand"):
        syntenic(record, record, dna, 50, strand="minus")


def test_cli_aligns_each_listed_pair_on_its_strand(tmp_path):
    # A pairs file as best-pairs writes it, a two-column line of an older file (strand +), and
    # the minus contig listed on both strands. The minus pair's outputs equal those of the
    # reverse complement aligned explicitly, with query coordinates on the forward strand and
    # strand '-' in the PAF, both BED files and the table.
    from minus_strand import TARGET_ID, write_case

    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.paf import read_paf
    from gpualign_plugin.model import Alignment
    from gpualign_plugin.scoring import reverse_complement_text

    q_path, t_path, target_text, pieces = write_case(str(tmp_path))
    m = len(pieces["ctg_minus"])
    pairs = tmp_path / "pairs.txt"
    pairs.write_text(f"ctg_minus\t{TARGET_ID}\t-\nctg_plus {TARGET_ID}\nctg_minus {TARGET_ID} +\n")
    prefix = str(tmp_path / "stranded")
    assert main(["syntenic", "-q", q_path, "-t", t_path, "-o", prefix, "--pairs", str(pairs)]) == 0
    rc_path = tmp_path / "rc.fa"
    rc_path.write_text(f">ctg_minus\n{reverse_complement_text(pieces['ctg_minus'])}\n")
    explicit = str(tmp_path / "explicit")
    assert main(["syntenic", "-q", str(rc_path), "-t", t_path, "-o", explicit]) == 0

    header, rows = read_table(f"{prefix}.blocks.tsv")
    assert header[-1].endswith("\tcigar\tstrand")
    assert [line.split(":")[0] for line in header if line.startswith("# pair")] == [
        f"# pair ctg_minus ({m} bp) vs {TARGET_ID} (10000 bp), strand -",
        f"# pair ctg_plus (3000 bp) vs {TARGET_ID} (10000 bp), strand +",
        f"# pair ctg_minus ({m} bp) vs {TARGET_ID} (10000 bp), strand +"]
    _, explicit_rows = read_table(f"{explicit}.blocks.tsv")
    minus_rows = [r for r in rows if r["query_id"] == "ctg_minus" and r["strand"] == "-"]
    assert len(minus_rows) == len(explicit_rows) == 5
    for row, plain in zip(minus_rows, explicit_rows):
        assert plain["strand"] == "+"
        assert (int(row["query_start"]), int(row["query_end"])) == \
            (m - int(plain["query_end"]), m - int(plain["query_start"]))
        same = ("block", "type", "target_start", "target_end", "query_len", "target_len", "score",
                "identity_pct", "cigar")
        assert [row[k] for k in same] == [plain[k] for k in same]
    assert {r["strand"] for r in rows if r["query_id"] == "ctg_plus"} == {"+"}

    paf = read_paf(f"{prefix}.paf")
    minus_paf = [p for p in paf if p["qname"] == "ctg_minus" and p["strand"] == "-"]
    explicit_paf = read_paf(f"{explicit}.paf")
    assert len(minus_paf) == len(explicit_paf) == 2
    for line, plain in zip(minus_paf, explicit_paf):
        assert (line["qstart"], line["qend"]) == (m - plain["qend"], m - plain["qstart"])
        assert {k: v for k, v in line.items() if k not in ("qstart", "qend", "strand")} == \
            {k: v for k, v in plain.items() if k not in ("qstart", "qend", "strand")}
    # Read as pairwise reads a minus-strand PAF line (the CIGAR against the reverse
    # complement of query[qstart:qend]), every line scores its AS.
    scheme = ScoringScheme.dna()
    codes = {name: scheme.alphabet.encode(text) for name, text in pieces.items()}
    target_codes = scheme.alphabet.encode(target_text)
    for p in paf:
        alignment = Alignment(p["qname"], p["tname"], p["qlen"], p["tlen"], p["qstart"], p["qend"],
                              p["tstart"], p["tend"], p["strand"], p["AS"], Cigar.from_string(p["cg"]))
        assert alignment.recompute_score(codes[p["qname"]], target_codes, scheme) == p["AS"]

    for side in ("query", "target"):
        with open(f"{prefix}.{side}.bed") as handle:
            bed = [line.rstrip("\n").split("\t") for line in handle]
        assert [fields[5] for fields in bed] == [r["strand"] for r in rows]
    for strand in ("plus", "minus"):
        with open(f"{prefix}.ctg_minus.{TARGET_ID}.{strand}.dotplot.png", "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_minus_pair_with_a_huge_block_penalty_is_pairwise_global_minus_line(tmp_path):
    # With a block penalty no alignment can recover, syntenic is the global alignment
    # (docs/ALGORITHMS.md); on the minus strand it must be gpualign pairwise's minus-strand
    # global line: coordinates, strand, CIGAR and score.
    from minus_strand import TARGET_ID, write_case

    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.paf import read_paf

    q_path, t_path, _, _ = write_case(str(tmp_path))
    (tmp_path / "pairs.txt").write_text(f"ctg_minus {TARGET_ID} -\n")
    prefix = str(tmp_path / "syn")
    assert main(["syntenic", "-q", q_path, "-t", t_path, "-o", prefix, "--pairs",
                 str(tmp_path / "pairs.txt"), "--block-penalty", "1000000"]) == 0
    assert main(["pairwise", "-q", q_path, "-t", t_path, "--mode", "global", "--secondary",
                 "--out", str(tmp_path / "global.paf")]) == 0
    (syntenic_line,) = read_paf(f"{prefix}.paf")
    (pairwise_line,) = [p for p in read_paf(tmp_path / "global.paf")
                        if p["qname"] == "ctg_minus" and p["strand"] == "-"]
    columns = ("qname", "qlen", "qstart", "qend", "strand", "tname", "tlen", "tstart", "tend",
               "nmatch", "alen", "AS", "NM", "cg")
    assert [syntenic_line[k] for k in columns] == [pairwise_line[k] for k in columns]
    assert syntenic_line["strand"] == "-" and pairwise_line["tp"] == "P"


def test_best_pairs_writes_the_strand_and_syntenic_follows_it(tmp_path):
    # The chain the workflow's best_hit pairing runs: placement, best-pairs, syntenic.
    from minus_strand import TARGET_ID, write_case

    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.paf import read_paf

    q_path, t_path, _, pieces = write_case(str(tmp_path))
    placed = str(tmp_path / "placed.paf")
    assert main(["pairwise", "-q", q_path, "-t", t_path, "--out", placed]) == 0
    pairs = str(tmp_path / "pairs.txt")
    assert main(["best-pairs", "--paf", placed, "--out", pairs]) == 0
    with open(pairs) as handle:
        assert [line.rstrip("\n").split("\t") for line in handle] == \
            [["ctg_minus", TARGET_ID, "-"], ["ctg_plus", TARGET_ID, "+"]]
    prefix = str(tmp_path / "syn")
    assert main(["syntenic", "-q", q_path, "-t", t_path, "-o", prefix, "--pairs", pairs]) == 0
    paf = read_paf(f"{prefix}.paf")
    for name, strand, aligned in (("ctg_minus", "-", 2850), ("ctg_plus", "+", 3000)):
        lines = [p for p in paf if p["qname"] == name]
        assert {p["strand"] for p in lines} == {strand}
        assert sum(p["qend"] - p["qstart"] for p in lines) == aligned
        assert all(p["nmatch"] >= 0.97 * p["alen"] for p in lines)
    assert len(pieces["ctg_minus"]) == 3000
