"""Karlin-Altschul statistics: BLAST's length adjustment, Spouge's correction, computed parameters, real BLAST.

The comparison with BLAST runs ``blastp``/``blastn`` for real (skipped where
ncbi-blast+ is not installed) through ``scripts/evalue-vs-blast``, the same harness
that measured the figures in docs/ALGORITHMS.md.
"""

import importlib.machinery
import importlib.util
import math
import os
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest

from gpualign_plugin.errors import InputError
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.search.api import score_database
from gpualign_plugin.statistics import (KarlinAltschul, ScoreHistogram, length_adjustment,
                                        parameters_for, published_parameters, ungapped_parameters)
from tests.paths import DATA, REPO, RESOURCES

BLOSUM62 = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
BLASTN = ScoringScheme.dna(2, -3, 5, 2)
HAVE_BLAST = all(shutil.which(tool) for tool in ("blastp", "blastn", "makeblastdb"))
needs_blast = pytest.mark.skipif(not HAVE_BLAST, reason="ncbi-blast+ is not installed")


def _harness():
    """``scripts/evalue-vs-blast`` as a module."""
    path = os.path.join(REPO, "scripts", "evalue-vs-blast")
    loader = importlib.machinery.SourceFileLoader("evalue_vs_blast", path)
    spec = importlib.util.spec_from_loader("evalue_vs_blast", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


# --- the length adjustment ------------------------------------------------------------------

def brute_force_adjustment(k, alpha_over_lambda, beta, m, n, r):
    """Largest integer ell >= 0 with f(ell) >= ell and K (m - ell)(n - r ell) >= max(m, n), by scanning."""
    best = 0
    for ell in range(0, min(m, n // r) + 1):
        space = (m - ell) * (n - r * ell)
        if space <= 0 or k * space < max(m, n):
            break
        if beta + alpha_over_lambda * (math.log(k) + math.log(space)) >= ell:
            best = ell
    return best


@pytest.mark.parametrize("k, alpha, lam, beta", [(0.041, 1.9, 0.267, -30.0), (0.41, 0.8, 0.625, -2.0),
                                                 (0.134, 0.7916, 0.3176, -3.2), (0.21, 1.2, 0.55, -5.0),
                                                 (0.010, 4.0, 0.206, -87.0)])
def test_length_adjustment_is_the_integer_part_of_the_fixed_point(k, alpha, lam, beta):
    rng = np.random.default_rng(11)
    for _ in range(60):
        m = int(rng.integers(5, 3000))
        r = int(rng.integers(1, 200))
        n = int(rng.integers(5, 5000)) * r
        got = length_adjustment(k, alpha / lam, beta, m, n, r)
        assert got == brute_force_adjustment(k, alpha / lam, beta, m, n, r), (m, n, r)


def test_length_adjustment_edges():
    # A search space too small for K m n >= max(m, n) has no adjustment.
    assert length_adjustment(0.041, 1.9 / 0.267, -30, 10, 10, 1) == 0
    # beta so negative that f(0) < 0: nothing to subtract.
    assert length_adjustment(0.041, 0.1, -100, 500, 10**6, 1) == 0
    # Grows with the search space (log), stays below both lengths.
    small = length_adjustment(0.041, 1.9 / 0.267, -30, 300, 10**5, 100)
    large = length_adjustment(0.041, 1.9 / 0.267, -30, 300, 10**9, 100)
    assert 0 < small < large < 300


@needs_blast
def test_effective_search_space_equals_blastn(tmp_path):
    # BLASTN prints its effective search space; ours must be the same integer.
    lam = read_fasta(os.path.join(RESOURCES, "genomes", "lambda.fa"), BLASTN)[0]
    pieces = [lam.text[i:i + 6000] for i in range(0, len(lam.text), 6000)]
    db = tmp_path / "db.fa"
    db.write_text("".join(f">s{i}\n{p}\n" for i, p in enumerate(pieces)))
    subprocess.run(["makeblastdb", "-in", db, "-dbtype", "nucl"], check=True, capture_output=True)
    lengths = [150, 777, 2500]
    query = tmp_path / "q.fa"
    query.write_text("".join(f">q{m}\n{lam.text[20000:20000 + m]}\n" for m in lengths))
    report = subprocess.run(["blastn", "-task", "blastn", "-dust", "no", "-query", query, "-db", db,
                             "-reward", "2", "-penalty", "-3", "-gapopen", "5", "-gapextend", "2"],
                            check=True, capture_output=True, text=True).stdout
    spaces = [int(x) for x in re.findall(r"Effective search space used: (\d+)", report)]
    ours = parameters_for(BLASTN)
    assert spaces == [ours.search_space(m, len(lam.text), len(pieces)) for m in lengths]


# --- parameters ----------------------------------------------------------------------------

def test_computed_ungapped_parameters_reproduce_blasts_ungapped_rows():
    # blast_stat.c's ungapped rows: BLOSUM62 0.3176/0.134/0.4012, PAM30 0.3400/0.283/1.754,
    # blastn +1/-3 1.374/0.711/1.31, +1/-4 1.383/0.738/1.36.
    for scheme, (lam, k, h) in [(BLOSUM62, (0.3176, 0.134, 0.4012)),
                                (ScoringScheme.from_matrix("PAM30", 9, 1), (0.3400, 0.283, 1.754)),
                                (ScoringScheme.dna(1, -3, 2, 2), (1.374, 0.711, 1.31)),
                                (ScoringScheme.dna(1, -4, 2, 2), (1.383, 0.738, 1.36))]:
        got = ungapped_parameters(scheme)
        assert got.lam == pytest.approx(lam, abs=6e-4)
        assert got.k == pytest.approx(k, rel=5e-3)
        assert got.h == pytest.approx(h, rel=5e-3)
        assert got.alpha == pytest.approx(got.lam / got.h)
    # +1/-1 is the closed-form case (scores -1 and +1 only): lambda = ln 3, K = (3/4 - 1/4)^2 / (3/4).
    plus_minus = ungapped_parameters(ScoringScheme.dna(1, -1, 4, 2))
    assert plus_minus.lam == pytest.approx(math.log(3), rel=1e-12)
    assert plus_minus.k == pytest.approx(1 / 3, rel=1e-12)
    assert plus_minus.beta == -2.0
    # Scores scaled by 10^6 (two possible scores far apart): lambda scales by 10^-6, K stays,
    # and no overflow warning from the root search.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = ungapped_parameters(ScoringScheme.dna(10**6, -10**6, 4, 2))
    assert scaled.lam == pytest.approx(math.log(3) / 10**6, rel=1e-12)
    assert scaled.k == pytest.approx(1 / 3, rel=1e-12)


def test_table_lookups_follow_blasts_rules():
    blastp = published_parameters(BLOSUM62)
    assert (blastp.lam, blastp.k, blastp.h, blastp.alpha, blastp.beta) == (0.267, 0.041, 0.14, 1.9, -30.0)
    # Spouge's derived constants: b = 2 G (a_u - a) with G = open + extend = 12, etc.
    assert blastp.spouge.b == pytest.approx(24 * (0.7916 - 1.9))
    assert blastp.spouge.tau == pytest.approx(24 * (4.964660 - 43.636200))
    blastn = published_parameters(BLASTN)
    assert (blastn.lam, blastn.k, blastn.alpha, blastn.beta, blastn.even_scores) == (0.625, 0.41, 0.8, -2.0, True)
    assert blastn.spouge is None
    # 4/-6 with gaps 10/4 is 2/-3 with gaps 5/2 in units of 2: lambda and alpha halve.
    doubled = published_parameters(ScoringScheme.dna(4, -6, 10, 4))
    assert (doubled.lam, doubled.k, doubled.alpha, doubled.beta) == (0.3125, 0.41, 0.4, -2.0)
    assert doubled.evalue(200, 500, 10**6, 3) == pytest.approx(blastn.evalue(100, 500, 10**6, 3))
    # Gap costs at or above 6/4 for 2/-3: BLASTN's ungapped regime.
    infinite = parameters_for(ScoringScheme.dna(2, -3, 6, 4))
    assert infinite.lam == pytest.approx(ungapped_parameters(BLASTN).lam) and "ungapped" in infinite.source
    # Biopython's BLOSUM80 is not NCBI's (A/A 7, not 5): NCBI's table must not be used for it.
    assert published_parameters(ScoringScheme.from_matrix("BLOSUM80", 10, 1)) is None
    assert published_parameters(ScoringScheme.from_matrix("BLOSUM45", 14, 2)).lam == 0.195


def test_untabulated_schemes_get_computed_or_fitted_values():
    scheme = ScoringScheme.from_matrix("BLOSUM62", 3, 3)
    ungapped = parameters_for(scheme)
    assert ungapped.lam == pytest.approx(0.3176, abs=6e-4) and "CAUTION" in ungapped.source
    histogram = ScoreHistogram()
    rng = np.random.default_rng(3)
    u = rng.random(50_000)
    scores = np.floor(np.log(0.05 * 300 * 400) / 0.25 - np.log(-np.log(u)) / 0.25).astype(np.int64)
    histogram.add_scores(scores, 300, np.full(len(scores), 400))
    fitted = parameters_for(scheme, histogram)
    assert fitted.lam == pytest.approx(0.25, rel=0.05)
    assert fitted.alpha == pytest.approx(ungapped.lam / ungapped.h) and fitted.beta == 0.0
    # Tables win over a histogram.
    assert parameters_for(BLOSUM62, histogram).lam == 0.267
    with pytest.raises(InputError, match="expected score"):
        ungapped_parameters(ScoringScheme.dna(5, -1, 5, 2))


# --- E-values ------------------------------------------------------------------------------

def test_evalues_fall_with_score_and_grow_with_the_search_space():
    for parameters in (parameters_for(BLOSUM62), parameters_for(BLASTN),
                       parameters_for(ScoringScheme.from_matrix("BLOSUM62", 3, 3))):
        scores = range(20, 400, 2)
        e = [parameters.evalue(s, 300, 10**7, 1000, 350) for s in scores]
        assert all(a > b for a, b in zip(e, e[1:]))
        bits = [parameters.bit_score(s) for s in scores]
        assert all(a < b for a, b in zip(bits, bits[1:]))
        for s in (30, 60, 120):
            assert parameters.evalue(s, 300, 10**7, 1000, 350) < parameters.evalue(s, 600, 10**7, 1000, 350)
            assert parameters.evalue(s, 300, 10**7, 1000, 350) < parameters.evalue(s, 300, 10**8, 1000, 350)


def test_length_adjusted_evalue_is_k_times_the_effective_space():
    blastn = parameters_for(BLASTN)
    m, n, r = 700, 48502, 9
    ell = blastn.length_adjustment(m, n, r)
    assert ell > 0
    # Odd scores count as the even score below them (2/-3 tables).
    for score in (40, 41):
        assert blastn.evalue(score, m, n, r) == pytest.approx(0.41 * (m - ell) * (n - r * ell) * math.exp(-0.625 * 40))
    plain = KarlinAltschul(0.267, 0.041, "test")  # no alpha: no length adjustment
    assert plain.evalue(50, 300, 10**6) == pytest.approx(0.041 * 300 * 10**6 * math.exp(-0.267 * 50))


def test_spouge_correction_tends_to_the_plain_formula_for_long_sequences():
    # For lengths far above the alignment length, Spouge's area is (m - l)(n - l) plus the
    # covariance term, l = a S + b: relative to m n it tends to 1.
    spouge = published_parameters(BLOSUM62)
    for score in (40, 80):
        plain = 0.041 * 10**5 * 10**5 * math.exp(-0.267 * score)
        assert spouge.evalue(score, 10**5, 10**5, 1, 10**5) == pytest.approx(plain, rel=0.01)
    # Short sequences: an alignment of score 285 (~ 515 columns expected) cannot fit in 146 x 141
    # residues by chance, so the corrected E-value is far below the plain one.
    assert spouge.evalue(285, 146, 141) < 1e-3 * 0.041 * 146 * 141 * math.exp(-0.267 * 285)
    # The database scale N / n: the same pair in a database 10 times larger.
    assert spouge.evalue(60, 300, 10**7, 1, 400) == pytest.approx(10 * spouge.evalue(60, 300, 10**6, 1, 400))


# --- real BLAST on the same pairs ----------------------------------------------------------

def mutated_lambda_fragments(count: int, seed: int) -> tuple[list[str], list[str]]:
    """Lambda cut into 6 kbp records, and ``count`` fragments of it (either strand) with
    substitutions and short indels at 0-30 %, plus unrelated random queries (1 in 5)."""
    genome = read_fasta(os.path.join(RESOURCES, "genomes", "lambda.fa"), BLASTN)[0].text.upper()
    database = [genome[i:i + 6000] for i in range(0, len(genome), 6000)]
    rng = np.random.default_rng(seed)
    complement = str.maketrans("ACGT", "TGCA")
    queries = []
    for k in range(count):
        length = int(rng.integers(60, 1500))
        if k % 5 == 4:
            queries.append("".join(rng.choice(list("ACGT"), length)))
            continue
        start = int(rng.integers(0, len(genome) - length))
        piece = list(genome[start:start + length])
        rate = float(rng.uniform(0.0, 0.3))
        out = []
        for base in piece:
            roll = rng.random()
            if roll < rate * 0.8:
                out.append(str(rng.choice([b for b in "ACGT" if b != base])))
            elif roll < rate * 0.9:
                continue
            elif roll < rate:
                out += [base, str(rng.choice(list("ACGT")))]
            else:
                out.append(base)
        text = "".join(out)
        queries.append(text.translate(complement)[::-1] if rng.random() < 0.5 else text)
    return queries, database


def write_fasta(path, prefix, texts):
    path.write_text("".join(f">{prefix}{k}\n{t}\n" for k, t in enumerate(texts)))


@needs_blast
@pytest.mark.parametrize("program, scheme, files", [
    ("blastp", BLOSUM62, ("globins.fasta", "globins.fasta")),
    ("blastp", ScoringScheme.from_matrix("BLOSUM45", 14, 2), ("search_queries.fa", "search_db.fa")),
    ("blastn", BLASTN, None),
    ("blastn", ScoringScheme.dna(1, -2, 2, 1), None),
], ids=["blastp-globins", "blastp-blosum45", "blastn-2-3", "blastn-1-2"])
def test_evalues_within_2x_of_blast_on_the_same_pairs(tmp_path, program, scheme, files):
    if files is None:
        queries, database = mutated_lambda_fragments(40, seed=7)
        write_fasta(tmp_path / "q.fa", "q", queries)
        write_fasta(tmp_path / "db.fa", "s", database)
        query_path, db_path = tmp_path / "q.fa", tmp_path / "db.fa"
    else:
        query_path, db_path = (os.path.join(DATA, name) for name in files)
    harness = _harness()
    queries, targets = read_fasta(query_path, scheme), read_fasta(db_path, scheme)
    result = harness.compare(program, scheme, queries, targets, str(tmp_path))
    summary = result["summary"]
    assert summary["blast_above_ours"] == 0  # our scores are optimal: BLAST can only miss
    assert summary["equal_score_pairs"] >= 15, summary
    ratios = [our / blast for *_, blast, our, _, _ in result["pairs"]]
    assert max(max(r, 1 / r) for r in ratios) < 2.0, summary
    assert abs(summary["median_ratio"] - 1) < 0.02, summary
    assert summary["largest_bit_score_difference"] < 0.01, summary


@needs_blast
def test_search_command_prints_blastps_evalues_and_bit_scores(tmp_path):
    # End to end: `gpualign search` tabular output against `blastp -outfmt 6` on the globins.
    # Where both report the same pair with the same score, the E-value and bit-score strings
    # must be identical (BLAST+'s tabular formatting, our statistics).
    from gpualign_plugin.cli.main import main

    globins = os.path.join(DATA, "globins.fasta")
    ours = tmp_path / "ours.m8"
    assert main(["search", "-q", globins, "-d", globins, "--top", "10", "--out-blast", str(ours)]) == 0
    subprocess.run(["makeblastdb", "-in", globins, "-dbtype", "prot", "-out", tmp_path / "db"],
                   check=True, capture_output=True)
    theirs = subprocess.run(["blastp", "-query", globins, "-db", tmp_path / "db", "-comp_based_stats", "0",
                             "-seg", "no", "-max_hsps", "1", "-outfmt", "6 qseqid sseqid score evalue bitscore"],
                            check=True, capture_output=True, text=True).stdout
    blast = {tuple(line.split("\t")[:2]): line.split("\t")[2:] for line in theirs.splitlines()}
    records = {record.id: record for record in read_fasta(globins, BLOSUM62)}
    compared = 0
    for line in ours.read_text().splitlines():
        fields = line.split("\t")
        pair = (fields[0], fields[1])
        if pair not in blast:
            continue
        score, evalue, bits = blast[pair]
        our_score = score_database([records[pair[0]].codes], [records[pair[1]].codes], BLOSUM62)[0, 0]
        if int(score) == our_score:
            assert (fields[10], fields[11]) == (evalue, bits), (pair, fields[10:], evalue, bits)
            compared += 1
    assert compared >= 30


@needs_blast
def test_placement_evalues_use_each_subjects_length_as_blastp(tmp_path):
    # Local placement of proteins against subjects of very different lengths (a globin alone,
    # and globins inside 700 and 7,000 random residues): Spouge's finite-size correction needs
    # the length of the subject holding the alignment. Each placement's E-value (ZE) must be
    # blastp's for the same (query, subject) pair and score, not that of a mean-length subject.
    from gpualign_plugin.pairwise.placement import place_local

    globins = {record.id: record.text for record in read_fasta(os.path.join(DATA, "globins.fasta"),
                                                                BLOSUM62)}
    rng = np.random.default_rng(11)
    letters = list("ACDEFGHIKLMNPQRSTVWY")

    def flank(length):
        return "".join(rng.choice(letters, length))

    names = ["HBB_HUMAN", "HBA_HUMAN", "MYG_PHYCA", "LGB2_LUPLU"]
    flanks = [(0, 0), (300, 400), (3000, 4000), (0, 40)]
    queries = [BLOSUM62.encode(f"q{k}", globins[name]) for k, name in enumerate(names)]
    targets = [BLOSUM62.encode(f"s{k}", flank(a) + globins[name] + flank(b))
               for k, (name, (a, b)) in enumerate(zip(names, flanks))]
    placed = place_local(queries, targets, BLOSUM62, backend="cpu", strands="plus")
    ours = {(a.query_id, a.target_id): a for a in placed}
    blast = {(f"q{q}", f"s{s}"): (score, evalue)
             for q, s, score, evalue, _ in _harness().run_blast("blastp", BLOSUM62, queries, targets,
                                                                str(tmp_path))}
    parameters = parameters_for(BLOSUM62)
    residues = sum(len(t) for t in targets)
    compared, mean_off = 0, 0
    for (query_id, target_id), alignment in ours.items():
        score, evalue = blast[(query_id, target_id)]
        if score != alignment.score or evalue == 0.0:
            continue
        assert alignment.evalue == pytest.approx(evalue, rel=1e-4), (query_id, target_id)
        mean = parameters.evalue(score, alignment.query_length, residues, len(targets))
        mean_off += abs(mean / evalue - 1) > 0.05
        compared += 1
    assert compared == len(names)
    assert mean_off >= 3  # the subjects' lengths matter: a mean-length subject would be wrong
