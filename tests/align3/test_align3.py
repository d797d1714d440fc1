"""Three-sequence alignment: oracle DP, projections, bounded-memory traceback, strands, CLI."""

from __future__ import annotations

import io
import os
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpualign_plugin.align3.api import (Region, _plan_slabs, align3, align3_score,
                                        default_linear_gap, memory_needed)
from gpualign_plugin.cli.main import main
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.maf import read_maf
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_text

DNA = ScoringScheme.dna()
PROTEIN = ScoringScheme.from_matrix("BLOSUM62")
# The moves in the order docs/ALGORITHMS.md writes down, spelled out again here.
ORDER = [(1, 1, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1)]


def oracle(texts, scheme, gap):
    """Plain-Python 3-D DP over the whole cube and a traceback by the written tie rule."""
    seqs = [[scheme.alphabet.letters.index(ch.upper()) for ch in t] for t in texts]
    mat = scheme.matrix.tolist()
    l, m, n = (len(s) for s in seqs)

    def column(i, j, k, move):
        residues = [(r, s[x - 1]) for r, (s, x, d) in enumerate(zip(seqs, (i, j, k), move)) if d]
        score = sum(mat[x][y] for (_, x), (_, y) in
                    [(p, q) for idx, p in enumerate(residues) for q in residues[idx + 1:]])
        return score - gap * len(residues) * (3 - len(residues))

    best = {(0, 0, 0): 0}
    for i in range(l + 1):
        for j in range(m + 1):
            for k in range(n + 1):
                if (i, j, k) == (0, 0, 0):
                    continue
                best[i, j, k] = max(best[i - di, j - dj, k - dk] + column(i, j, k, (di, dj, dk))
                                    for di, dj, dk in ORDER if di <= i and dj <= j and dk <= k)
    rows = [[], [], []]
    i, j, k = l, m, n
    while (i, j, k) != (0, 0, 0):
        for move in ORDER:
            di, dj, dk = move
            if di <= i and dj <= j and dk <= k and \
                    best[i - di, j - dj, k - dk] + column(i, j, k, move) == best[i, j, k]:
                break
        for r, (t, x, d) in enumerate(zip(texts, (i, j, k), move)):
            rows[r].append(t[x - 1] if d else "-")
        i, j, k = i - di, j - dj, k - dk
    return best[l, m, n], tuple("".join(reversed(r)) for r in rows)


def projection_score(row_x, row_y, scheme, gap):
    """Score of the pairwise projection of two rows: all-gap columns dropped, linear gap."""
    score = 0
    for x, y in zip(row_x, row_y):
        if x == "-" and y == "-":
            continue
        if x == "-" or y == "-":
            score -= gap
        else:
            score += int(scheme.matrix[scheme.alphabet.letters.index(x.upper()),
                                       scheme.alphabet.letters.index(y.upper())])
    return score


def check_alignment(result, texts, scheme, gap):
    for row, text in zip(result.rows, texts):
        assert row.replace("-", "") == text
    assert len({len(r) for r in result.rows}) == 1
    assert all(any(r[c] != "-" for r in result.rows) for c in range(result.columns))
    pairs = [(0, 1), (0, 2), (1, 2)]
    assert result.score == sum(projection_score(result.rows[x], result.rows[y], scheme, gap)
                               for x, y in pairs)


def encode(texts, scheme):
    return [scheme.encode(f"s{i}", t) for i, t in enumerate(texts)]


def random_texts(rng, letters, longest):
    return [
        "".join(rng.choice(letters) for _ in range(rng.randint(1, longest))) for _ in range(3)]


@pytest.mark.parametrize("scheme,letters,gap", [(DNA, "ACGTacgt", 5), (DNA, "AC", 2),
                                                (PROTEIN, "ARNDCQEGHILKMFPSTWYV", 8)])
def test_score_and_path_equal_the_plain_python_dp(scheme, letters, gap):
    rng = random.Random(len(letters) * 31 + gap)
    for case in range(25):
        texts = random_texts(rng, letters, 25 if case % 5 == 0 else 10)
        expected_score, expected_rows = oracle(texts, scheme, gap)
        result = align3(*encode(texts, scheme), scheme, gap)
        assert result.score == expected_score
        assert result.rows == expected_rows
        check_alignment(result, texts, scheme, gap)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="ACG", min_size=1, max_size=12), min_size=3, max_size=3),
       st.integers(min_value=0, max_value=6))
def test_many_ties_follow_the_written_order(texts, gap):
    scheme = ScoringScheme.dna(match=1, mismatch=-1)
    expected_score, expected_rows = oracle(texts, scheme, gap)
    result = align3(*encode(texts, scheme), scheme, gap)
    assert (result.score, result.rows) == (expected_score, expected_rows)


def test_score_only_equals_the_alignment_score():
    rng = random.Random(7)
    for _ in range(10):
        texts = random_texts(rng, "ACGT", 60)
        sequences = encode(texts, DNA)
        assert align3_score(*sequences, DNA, 4) == align3(*sequences, DNA, 4).score
        assert align3_score(*(s.codes for s in sequences), DNA, 4) == align3(*sequences, DNA, 4).score


def test_checkpointed_traceback_gives_the_full_matrix_path():
    rng = random.Random(11)
    checkpointed = 0
    for _ in range(6):
        texts = random_texts(rng, "ACGT", 70)
        texts[0] = texts[0] + "ACGT" * 5
        sequences = encode(texts, DNA)
        lengths = tuple(len(t) for t in texts)
        full = align3(*sequences, DNA, 3)
        assert _plan_slabs(lengths, 1 << 30) == lengths[0] + 1
        for height in (1, 2, 3, 7, 16, lengths[0] // 2):
            budget = memory_needed(lengths, height)
            if _plan_slabs(lengths, budget) > lengths[0]:
                continue
            checkpointed += 1
            small = align3(*sequences, DNA, 3, memory_budget=budget)
            assert (small.score, small.rows) == (full.score, full.rows)
    assert checkpointed >= 12


def test_longer_than_a_tile_in_every_direction():
    rng = random.Random(5)
    texts = ["".join(rng.choice("ACGT") for _ in range(n)) for n in (70, 45, 66)]
    sequences = encode(texts, DNA)
    result = align3(*sequences, DNA, 5)
    check_alignment(result, texts, DNA, 5)
    lengths = (70, 45, 66)
    small = align3(*sequences, DNA, 5, memory_budget=memory_needed(lengths, 9))
    assert small.rows == result.rows


def test_budget_too_small_is_a_clear_error():
    sequences = encode(["ACGT" * 10] * 3, DNA)
    with pytest.raises(InputError, match="needs at least"):
        align3(*sequences, DNA, 5, memory_budget=1000)


def test_bad_gap_and_empty_sequence_are_errors():
    sequences = encode(["ACGT", "ACG", "AGT"], DNA)
    with pytest.raises(InputError, match="--gap"):
        align3(*sequences, DNA, -1)
    with pytest.raises(InputError, match="non-empty"):
        align3_score(sequences[0].codes, sequences[1].codes, np.zeros(0, np.uint8), DNA, 2)


def test_default_linear_gap_follows_the_documented_rule():
    assert default_linear_gap(PROTEIN) == 8
    assert default_linear_gap(DNA) == 5
    assert default_linear_gap(ScoringScheme.dna(gap_open=0, gap_extend=3)) == 3


def test_minus_strand_region_reads_the_reverse_complement():
    rng = random.Random(2)
    source_text = "".join(rng.choice("ACGTacgt") for _ in range(50))
    source = DNA.encode("chrM", source_text)
    start, end = 12, 37
    piece = reverse_complement_text(source_text[start:end])
    others = encode([piece.upper()[:20] + "TT", "G" + piece[3:]], DNA)
    result = align3(Region(source, start, end, "-", source="genome.chrM"), *others, DNA, 4)
    check_alignment(result, [piece] + [s.text for s in others], DNA, 4)
    assert result.starts[0] == start and result.ends[0] == end and result.strands[0] == "-"
    # MAF's start counts on the reverse complement of the whole source.
    maf_start = result.maf_start(0)
    assert maf_start == len(source_text) - end
    assert reverse_complement_text(source_text)[maf_start:maf_start + end - start] == piece
    assert result.sources[0] == "genome.chrM"
    plus = align3(Region(source, start, end, "+"), *others, DNA, 4)
    assert plus.rows[0].replace("-", "") == source_text[start:end]
    assert plus.maf_start(0) == start


def test_minus_strand_needs_dna_and_regions_must_fit():
    protein = PROTEIN.encode("p", "MKVLAAGIVG")
    with pytest.raises(InputError, match="minus strand"):
        align3(Region(protein, strand="-"), protein, protein, PROTEIN, 8)
    dna = DNA.encode("d", "ACGTACGT")
    with pytest.raises(InputError, match="outside"):
        align3(Region(dna, 2, 20), dna, dna, DNA, 4)


# ---------------------------------------------------------------------------------------------
# CLI


def write(path, text):
    path.write_text(text)
    return str(path)


@pytest.fixture
def trio(tmp_path):
    rng = random.Random(9)
    base = "".join(rng.choice("ACGT") for _ in range(40))
    texts = [base, base[:15] + "GG" + base[15:], base[:30] + base[33:]]
    return texts, write(tmp_path / "trio.fa", "".join(f">r{i} x\n{t}\n" for i, t in enumerate(texts)))


def test_cli_one_file_with_three_records(tmp_path, trio):
    texts, fasta = trio
    maf, afa, aln = (str(tmp_path / name) for name in ("t.maf", "t.afa", "t.aln"))
    assert main(["align3", "--fasta", fasta, "--maf", maf, "--fasta-out", afa, "--clustal", aln,
                 "--threads", "1"]) == 0
    [block] = read_maf(maf)
    expected = align3(*encode(texts, DNA), DNA, 5)
    assert block.rows == expected.rows and block.score == expected.score
    assert block.sources == ("r0", "r1", "r2")
    from Bio import AlignIO, SeqIO

    assert [str(r.seq) for r in SeqIO.parse(afa, "fasta")] == list(expected.rows)
    assert [str(r.seq) for r in AlignIO.read(aln, "clustal")] == list(expected.rows)


def test_cli_three_genome_files_and_triplets(tmp_path):
    rng = random.Random(4)
    genomes = {}
    for name in ("hs", "mm", "cf"):
        records = {rid: "".join(rng.choice("ACGT") for _ in range(rng.randint(20, 40)))
                   for rid in (f"{name}1", "shared")}
        genomes[name] = records
        write(tmp_path / f"{name}.fa", "".join(f">{k}\n{v}\n" for k, v in records.items()))
    fastas = [f"{n}={tmp_path / n}.fa" for n in genomes]
    triplets = write(tmp_path / "t.tsv", "hs1\tmm1\tcf1\tfirst\n# comment\n\nhs.shared\tmm.shared\tcf1\n")
    maf = str(tmp_path / "all.maf")
    out_dir = tmp_path / "afa"
    assert main(["align3", "--fasta", *fastas, "--triplets", triplets, "--maf", maf,
                 "--fasta-dir", str(out_dir), "--gap", "3"]) == 0
    blocks = read_maf(maf)
    assert [b.sources for b in blocks] == [("hs.hs1", "mm.mm1", "cf.cf1"),
                                           ("hs.shared", "mm.shared", "cf.cf1")]
    texts = [genomes["hs"]["shared"], genomes["mm"]["shared"], genomes["cf"]["cf1"]]
    assert blocks[1].rows == align3(*encode(texts, DNA), DNA, 3).rows
    assert sorted(os.listdir(out_dir)) == ["first.fasta", "hs.shared_mm.shared_cf1.fasta"]

    ambiguous = write(tmp_path / "bad.tsv", "shared\tmm1\tcf1\n")
    assert main(["align3", "--fasta", *fastas, "--triplets", ambiguous,
                 "--maf", str(tmp_path / "x.maf")]) == 2
    assert not os.path.exists(tmp_path / "x.maf")


@pytest.mark.parametrize("content,message", [
    (">a\nACGT\n>b\nACGG\n", "3 records"),
    (">a\nACGT\n>b\nACGG\n>c\nAC!T\n", "position 3"),
])
def test_cli_bad_input_exits_2_without_output(tmp_path, capsys, content, message):
    fasta = write(tmp_path / "in.fa", content)
    maf = tmp_path / "out.maf"
    assert main(["align3", "--fasta", fasta, "--maf", str(maf)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and message in error and "in.fa" in error
    assert not maf.exists()


def test_cli_bad_triplets_line_names_file_and_line(tmp_path, trio, capsys):
    _, fasta = trio
    triplets = write(tmp_path / "t.tsv", "r0\tr1\tr2\nr0\tr1\n")
    assert main(["align3", "--fasta", fasta, "--triplets", triplets, "--maf",
                 str(tmp_path / "o.maf")]) == 2
    assert "t.tsv: line 2:" in capsys.readouterr().err
    assert not (tmp_path / "o.maf").exists()


def test_cli_fasta_dir_that_is_a_file_is_refused_before_the_work(tmp_path, trio, capsys):
    _, fasta = trio
    triplets = write(tmp_path / "t.tsv", "r0\tr1\tr2\n")
    not_a_directory = write(tmp_path / "afa", "")
    assert main(["align3", "--fasta", fasta, "--triplets", triplets, "--maf", str(tmp_path / "o.maf"),
                 "--fasta-dir", not_a_directory]) == 2
    assert f"{not_a_directory}: exists and is not a directory" in capsys.readouterr().err
    assert not (tmp_path / "o.maf").exists()


def test_clustal_view_marks_identical_columns():
    from gpualign_plugin.io.msa import conservation_line, write_clustal

    result = align3(*encode(["ACGTA", "ACGA", "aCTTA"], DNA), DNA, 5)
    marks = conservation_line(result)
    for c, mark in enumerate(marks):
        column = {row[c].upper() for row in result.rows}
        assert (mark == "*") == (len(column) == 1 and "-" not in column)
    handle = io.StringIO()
    write_clustal(handle, result)
    assert handle.getvalue().startswith("CLUSTAL")


def test_serial_and_parallel_sweeps_agree():
    import numba

    rng = random.Random(8)
    texts = ["".join(rng.choice("ACGT") for _ in range(n)) for n in (150, 170, 30)]
    sequences = encode(texts, DNA)
    budget = memory_needed((150, 170, 30), 40)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        results += [align3(*sequences, DNA, 4), align3(*sequences, DNA, 4, memory_budget=budget)]
    assert len({(r.score, r.rows) for r in results}) == 1


# ---------------------------------------------------------------------------------------------
# Backends (the GPU engine itself is compared with this one in test_gpu_align3.py)


def test_hyperplane_launches_cover_every_cell_of_a_band_once():
    from gpualign_plugin.align3.gpu import hyperplane_shape

    for height, m, n in [(1, 1, 1), (3, 1, 7), (5, 8, 2), (7, 6, 6), (2, 0, 4), (4, 9, 0), (1, 0, 0)]:
        seen = np.zeros((height, m + 1, n + 1), dtype=np.int64)
        for q in range(height + m + n):
            ii_lo, rows, width = hyperplane_shape(q, height, m, n)
            for t in range(rows * width):  # the thread mapping of align3.cu
                ii = ii_lo + t // width
                j = max(0, q - ii - n) + t % width
                if j > min(m, q - ii):
                    continue
                k = q - ii - j
                assert 0 <= ii < height and 0 <= k <= n
                seen[ii, j, k] += 1
        assert (seen == 1).all()


def test_gpu_sweep_memory_estimate_and_bands():
    from gpualign_plugin.align3.gpu import RING_BYTES, band_height, sweep_bytes

    assert band_height(0) * 16 <= RING_BYTES and band_height(10**9) == 1
    plane = 101 * 201
    assert sweep_bytes(100, 200, 10, False) == 8 * plane + 16 * 10 * 101
    assert sweep_bytes(100, 200, 10, True) == 8 * plane + 16 * 10 * 101 + 10 * plane


@pytest.fixture
def no_gpu(monkeypatch):
    """Make every GPU probe report an unusable device, whatever the machine has."""
    from gpualign_plugin.runtime import gpu as runtime

    monkeypatch.setattr(runtime, "probe", lambda device=0: runtime.GpuStatus(False, "no GPU here (test)"))


def test_cli_gpu_backend_without_a_gpu_exits_2_with_one_line(tmp_path, trio, no_gpu, capsys):
    _, fasta = trio
    maf = tmp_path / "t.maf"
    assert main(["align3", "--fasta", fasta, "--maf", str(maf), "--backend", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--backend gpu" in err[0] and "no GPU here" in err[0]
    assert not maf.exists()


def test_cli_auto_backend_falls_back_to_the_cpu_with_the_same_output(tmp_path, trio, no_gpu):
    import json

    _, fasta = trio
    outputs = {}
    for backend in ("auto", "cpu"):
        paths = [tmp_path / f"{backend}{suffix}" for suffix in (".maf", ".afa", ".aln", ".json")]
        assert main(["align3", "--fasta", fasta, "--maf", str(paths[0]), "--fasta-out", str(paths[1]),
                     "--clustal", str(paths[2]), "--stats", str(paths[3]), "--backend", backend]) == 0
        assert json.loads(paths[3].read_text())["engine"] == "cpu"
        outputs[backend] = [[line for line in p.read_text().splitlines() if not line.startswith("# gpualign")]
                            for p in paths[:3]]
    assert outputs["auto"] == outputs["cpu"]


def test_unknown_backend_is_an_error():
    with pytest.raises(ValueError, match="backend"):
        align3(*encode(["AC", "A", "C"], DNA), DNA, 2, backend="tpu")


def test_cli_triplets_file_with_a_byte_order_mark_and_crlf(tmp_path, trio):
    # Windows editors save UTF-8 with a BOM: before, the first id read '\ufeffr0' ("in none of
    # the FASTA files").
    _, fasta = trio
    triplets = tmp_path / "t.tsv"
    triplets.write_bytes("\ufeffr0\tr1\tr2\r\n".encode("utf-8"))
    maf = tmp_path / "o.maf"
    assert main(["align3", "--fasta", fasta, "--triplets", str(triplets), "--maf", str(maf)]) == 0
    assert [b.sources for b in read_maf(maf)] == [("r0", "r1", "r2")]
