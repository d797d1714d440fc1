"""Database search: score pass against oracles, exact top-k and tie rule, chunks and shards, statistics, CLI."""

from __future__ import annotations

import math
import os
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import biopython_aligner

from gpualign_plugin.cli.main import main
from gpualign_plugin.errors import InputError
from gpualign_plugin.io.blasttab import format_bit_score, format_evalue, read_blast_tab
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.io.hits import read_hits, write_hits
from gpualign_plugin.pairwise.cpu import score_pair
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes
from gpualign_plugin.search import cpu as search_kernels
from gpualign_plugin.search.api import finish, merge_results, score_database, search
from gpualign_plugin.statistics import (KarlinAltschul, ScoreHistogram, fit_parameters,
                                        published_parameters)
from paths import DATA

PROTEIN = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
DNA = ScoringScheme.dna()


@pytest.fixture(scope="module")
def fixture_paths():
    here = DATA
    return os.path.join(here, "search_queries.fa"), os.path.join(here, "search_db.fa")


@pytest.fixture(scope="module")
def proteins(fixture_paths):
    query_path, db_path = fixture_paths
    return read_fasta(query_path, PROTEIN), read_fasta(db_path, PROTEIN)


def brute_force(queries, targets, scheme, strands, top):
    """Every (query, target, strand) scored by the pairwise engine, ranked by the written rule."""
    ranked = []
    for query in queries:
        rows = []
        for index, target in enumerate(targets):
            for rank, sign in enumerate(strands):
                codes = reverse_complement_codes(query.codes) if sign == "-" else query.codes
                score = score_pair(codes, target.codes, scheme, "local").score
                if score > 0:
                    rows.append((-score, index, rank))
        ranked.append(sorted(rows)[:top])
    return ranked


def ranked_hits(result, n_queries):
    out = [[] for _ in range(n_queries)]
    for hit in result.hits:
        out[hit.query_index].append((-hit.alignment.score, hit.target_index,
                                     int(hit.alignment.strand == "-")))
    return out


def test_score_pass_equals_biopython_on_protein_fixture(proteins):
    queries, db = proteins
    scores = score_database([q.codes for q in queries], [t.codes for t in db], PROTEIN)
    aligner = biopython_aligner(PROTEIN, "local")
    for qi, query in enumerate(queries):
        for ti, target in enumerate(db):
            assert scores[qi, ti] == aligner.score(target.text.upper(), query.text.upper()), \
                (query.id, target.id)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text("ACGTN", min_size=1, max_size=40), min_size=1, max_size=3),
       st.lists(st.text("ACGTN", min_size=1, max_size=70), min_size=1, max_size=150),
       st.integers(0, 6), st.integers(1, 3))
def test_score_pass_equals_biopython_on_random_dna(queries, targets, gap_open, gap_extend):
    # Up to 150 targets of mixed lengths: several batches, padded lanes and an unfilled last batch.
    scheme = ScoringScheme.dna(2, -3, gap_open, gap_extend)
    q_codes = [DNA.alphabet.encode(q) for q in queries]
    t_codes = [DNA.alphabet.encode(t) for t in targets]
    scores = score_database(q_codes, t_codes, scheme)
    aligner = biopython_aligner(scheme, "local")
    for qi, query in enumerate(queries):
        for ti, target in enumerate(targets):
            assert scores[qi, ti] == aligner.score(target, query)


def test_padding_never_raises_a_lane_score():
    # One long target forces long padding on its short batch mates.
    rng = np.random.default_rng(3)
    targets = [rng.integers(0, 4, 3).astype(np.uint8) for _ in range(search_kernels.LANES - 1)]
    targets.append(rng.integers(0, 4, 300).astype(np.uint8))
    query = rng.integers(0, 4, 50).astype(np.uint8)
    scores = score_database([query], targets, DNA)[0]
    for k, target in enumerate(targets):
        assert scores[k] == score_pair(query, target, DNA, "local").score


def test_scores_beyond_int16_are_rescored_exactly_in_32_bits():
    # 3,300 identical bases at match 10 score 33,000 (> 32,767): the 16-bit pass saturates,
    # the 32-bit pass gives the exact score; the batch mates keep theirs.
    scheme = ScoringScheme.dna(10, -10, 5, 2)
    assert search_kernels.fits_int16(scheme.matrix, scheme.gap_open, scheme.gap_extend)
    rng = np.random.default_rng(0)
    long = rng.integers(0, 4, 3400).astype(np.uint8)
    targets = [long, long[:1000], rng.integers(0, 4, 300).astype(np.uint8)]
    scores = score_database([long[:3300]], targets, scheme)[0]
    assert scores[0] == 33_000
    assert scores[1] == 10_000 and scores[2] == score_pair(long[:3300], targets[2], scheme, "local").score


def test_large_scores_use_the_32_bit_pass_alone():
    scheme = ScoringScheme.dna(1500, -2000, 900, 300)
    assert not search_kernels.fits_int16(scheme.matrix, scheme.gap_open, scheme.gap_extend)
    rng = np.random.default_rng(9)
    queries = ["".join(rng.choice(list("ACGT"), n)) for n in (25, 40)]
    targets = ["".join(rng.choice(list("ACGT"), n)) for n in rng.integers(5, 60, 20)]
    scores = score_database([DNA.alphabet.encode(q) for q in queries],
                            [DNA.alphabet.encode(t) for t in targets], scheme)
    aligner = biopython_aligner(scheme, "local")
    assert [[aligner.score(t, q) for t in targets] for q in queries] == scores.tolist()


def test_score_pass_in_small_kernel_calls_reports_progress_and_same_scores(proteins, monkeypatch):
    queries, db = proteins
    q_codes, t_codes = [q.codes for q in queries], [t.codes for t in db]
    whole = score_database(q_codes, t_codes, PROTEIN)
    monkeypatch.setattr(search_kernels, "CELLS_PER_CALL", 1)  # one batch per kernel call
    reports = []
    pieces = score_database(q_codes, t_codes, PROTEIN, on_progress=lambda r, c: reports.append((r, c)))
    assert (pieces == whole).all()
    assert len(reports) == -(-len(db) // search_kernels.LANES)
    residues = sum(len(t) for t in db)
    assert sum(r for r, _ in reports) == residues
    assert sum(c for _, c in reports) == residues * sum(len(q) for q in queries)


def test_top_k_equals_brute_force_with_forced_ties(proteins):
    queries, db = proteins
    # Duplicates under other names force score ties that only the target order can break.
    db = db + [PROTEIN.encode(f"copy_of_{t.id}", t.text) for t in db[:10]]
    result = search(queries, enumerate(db), PROTEIN, sum(map(len, db)), len(db), top=8)
    assert ranked_hits(result, len(queries)) == brute_force(queries, db, PROTEIN, "+", 8)
    for hit in result.hits:
        a = hit.alignment
        assert a.recompute_score(queries[hit.query_index].codes, db[hit.target_index].codes,
                                 PROTEIN) == a.score


@pytest.mark.parametrize("batch_cells", [1 << 24, 0], ids=["batched", "pairwise-threads"])
def test_hit_alignments_are_the_pairwise_engines(proteins, monkeypatch, batch_cells):
    from gpualign_plugin.pairwise.api import align_sequences
    from gpualign_plugin.search import api

    monkeypatch.setattr(api, "BATCH_CELLS", batch_cells)
    queries, db = proteins
    result = search(queries, enumerate(db), PROTEIN, 10**6, len(db), top=6)
    assert len(result.hits) == 6 * len(queries)
    for hit in result.hits:
        assert hit.alignment == align_sequences(queries[hit.query_index], db[hit.target_index],
                                                PROTEIN, "local")
        assert hit.alignment.recompute_score(queries[hit.query_index].codes,
                                             db[hit.target_index].codes, PROTEIN) == hit.alignment.score


def test_dna_both_strands_ranked_plus_before_minus():
    rng = np.random.default_rng(11)
    palindrome = "ACGTTTAAACGT"  # its own reverse complement: both strands tie on every target
    targets = ["".join(rng.choice(list("ACGT"), 60)) for _ in range(12)]
    targets[4] = targets[4][:20] + palindrome + targets[4][32:]
    targets.append(targets[4])
    queries = [DNA.encode("pal", palindrome), DNA.encode("rnd", "".join(rng.choice(list("ACGT"), 30)))]
    db = [DNA.encode(f"t{k}", t) for k, t in enumerate(targets)]
    result = search(queries, enumerate(db), DNA, sum(map(len, db)), len(db), top=6, strands="both")
    assert ranked_hits(result, 2) == brute_force(queries, db, DNA, "+-", 6)
    first = [h for h in result.hits if h.query_index == 0][:4]
    assert [(h.target_index, h.alignment.strand) for h in first] == [(4, "+"), (4, "-"), (12, "+"),
                                                                      (12, "-")]
    for hit in result.hits:
        a = hit.alignment
        assert a.recompute_score(queries[hit.query_index].codes, db[hit.target_index].codes, DNA) == a.score


def test_chunked_and_sharded_searches_equal_one_pass(proteins):
    queries, db = proteins
    whole = search(queries, enumerate(db), PROTEIN, 12345, len(db), top=5)
    chunked = search(queries, enumerate(db), PROTEIN, 12345, len(db), top=5, chunk_residues=700)
    assert chunked.hits == whole.hits
    cuts = [0, 7, 30, len(db)]
    parts = [search(queries, ((k, db[k]) for k in range(a, b)), PROTEIN, 12345, len(db), top=5)
             for a, b in zip(cuts, cuts[1:])]
    assert merge_results(parts).hits == whole.hits


def test_hits_file_round_trip(tmp_path, proteins):
    queries, db = proteins
    result = search(queries, [(i, db[i]) for i in range(4, 9)], PROTEIN, 999, len(db), top=3)
    result.histogram = ScoreHistogram()
    result.histogram.add_value(17, 3, 4000)
    names, lengths = [t.id for t in db[4:9]], [len(t) for t in db[4:9]]
    write_hits(tmp_path / "a.hits", result, PROTEIN.describe(), 2, 5, queries, 4, names, lengths)
    back = read_hits(tmp_path / "a.hits")
    assert (back.scheme, back.shard, back.shards) == (PROTEIN.describe(), 2, 5)
    assert back.result.hits == result.hits and back.result.queries == result.queries
    assert back.result.histogram.items() == [(17, 3, 4000)]
    assert (back.result.top, back.result.database_residues,
            back.result.database_sequences) == (3, 999, len(db))
    assert back.query_texts == [q.text for q in queries]
    assert (back.start, back.names, back.lengths) == (4, names, lengths)
    assert back.target_texts == {h.target_index: db[h.target_index].text for h in result.hits}
    (tmp_path / "old.hits").write_text("#gpualign-hits\t1\n#top\t3\n")
    with pytest.raises(InputError, match="version 1 .hits file"):
        read_hits(tmp_path / "old.hits")


def test_hits_file_cut_at_a_line_end_is_refused(tmp_path, proteins):
    """A .hits file cut short at the end of a line (a partial copy) lost hit lines, and merge-hits
    merged the rest without a word; the #hits line counts them."""
    queries, db = proteins
    result = search(queries, enumerate(db), PROTEIN, 999, len(db), top=3)
    write_hits(tmp_path / "a.hits", result, PROTEIN.describe(), 0, 1, queries, 0,
               [t.id for t in db], [len(t) for t in db])
    lines = (tmp_path / "a.hits").read_text().splitlines(keepends=True)
    for kept in (len(lines) - 1, len(lines) - len(result.hits)):  # one hit line lost; every one
        (tmp_path / "cut.hits").write_text("".join(lines[:kept]))
        with pytest.raises(InputError, match=f"{len(result.hits)} hit lines announced, "):
            read_hits(tmp_path / "cut.hits")


def test_evalues_follow_the_formula_and_fall_with_score(proteins):
    queries, db = proteins
    residues = sum(map(len, db))
    result = finish(search(queries, enumerate(db), PROTEIN, residues, len(db), top=10), PROTEIN)
    assert (result.parameters.lam, result.parameters.k) == (0.267, 0.041)
    for hit in result.hits:
        m = len(queries[hit.query_index])
        s = hit.alignment.score
        n = hit.alignment.target_length
        # blastp's finite-size correction: the search area of this pair, scaled to the database.
        area = result.parameters.spouge.area(s, 0.267, m, n)
        assert hit.evalue == pytest.approx(area * 0.041 * math.exp(-0.267 * s) * residues / n,
                                           rel=1e-12)
        assert hit.bit_score == pytest.approx((0.267 * s - math.log(0.041)) / math.log(2), rel=1e-12)
    for q in range(len(queries)):
        hits = [h for h in result.hits if h.query_index == q]
        assert all(a.bit_score >= b.bit_score for a, b in zip(hits, hits[1:]))
        # The correction depends on the subject's length too: at the same lengths E falls with score.
        m, evalue = len(queries[q]), result.parameters.evalue
        for a, b in zip(hits, hits[1:]):
            n = b.alignment.target_length
            assert evalue(a.alignment.score, m, residues, len(db), n) <= \
                evalue(b.alignment.score, m, residues, len(db), n)
        assert hits[0].alignment.is_primary and not any(h.alignment.is_primary for h in hits[1:])


def test_published_parameters_cover_blast_defaults():
    assert published_parameters(PROTEIN).lam == 0.267
    assert published_parameters(ScoringScheme.from_matrix("PAM30", 9, 1)).k == 0.11
    blastn = published_parameters(DNA)  # reward 2 penalty -3, gaps 5/2: BLASTN's defaults
    assert (blastn.lam, blastn.k, blastn.even_scores) == (0.625, 0.41, True)
    assert blastn.evalue(31, 100, 1000) == blastn.evalue(30, 100, 1000)  # odd rounds down
    assert published_parameters(ScoringScheme.from_matrix("BLOSUM62", 3, 3)) is None


def test_maximum_likelihood_fit_recovers_known_parameters():
    # Scores drawn from the Gumbel law the fit assumes, lambda 0.3, K 0.05, m*n = 250*400.
    rng = np.random.default_rng(5)
    lam, k, space = 0.3, 0.05, 250 * 400
    u = rng.random(200_000)
    scores = np.floor(np.log(k * space) / lam - np.log(-np.log(u)) / lam).astype(np.int64)
    histogram = ScoreHistogram()
    histogram.add_scores(scores, 250, np.full(len(scores), 400))
    fitted = fit_parameters(histogram)
    # Integer scores shift the law by about half a unit: lambda is unaffected, K by exp(lambda/2).
    assert fitted.lam == pytest.approx(lam, rel=0.02)
    assert fitted.k == pytest.approx(k * math.exp(-lam / 2), rel=0.1)
    with pytest.raises(InputError, match="positive scores"):
        small = ScoreHistogram()
        small.add_value(20, 10, 1000)
        fit_parameters(small)


def test_blast_number_formats():
    assert [format_evalue(e) for e in (1e-200, 2.5e-105, 5.0e-5, 0.05, 0.55, 3.7, 15.0)] == \
        ["0.0", "2.50e-105", "5.00e-05", "0.050", "0.55", "3.7", "15"]
    assert [format_bit_score(b) for b in (7.25, 45.67, 99.95, 234.7, 123456.0)] == \
        [" 7.2", "45.7", " 99", "234", "1.235e+05"]


def run_cli(*args) -> int:
    return main([str(a) for a in args])


@pytest.mark.parametrize("scoring", [[], ["--gap-open", 3, "--gap-extend", 3]],
                         ids=["published-statistics", "fitted-statistics"])
def test_cli_shards_merge_to_the_single_job_byte_for_byte(tmp_path, fixture_paths, scoring):
    # BLOSUM62 3/3 is in no NCBI table: lambda and K are fitted, and the shards' score
    # histograms must add up to the single job's for the E-values to agree.
    query, db = fixture_paths
    outs = {"blast": "one.m8", "tsv": "one.tsv", "sam": "one.sam"}
    assert run_cli("search", "-q", query, "-d", db, "--top", 4, "--chunk-residues", 3000, *scoring,
                   *[x for kind, name in outs.items() for x in (f"--out-{kind}", tmp_path / name)]) == 0
    for shard in range(3):
        assert run_cli("search", "-q", query, "-d", db, "--top", 4, "--shards", 3, "--shard", shard,
                       *scoring, "--out-hits", tmp_path / f"part{shard}.hits") == 0
    # merge-hits reads neither the queries nor the database: the .hits files carry what it needs.
    assert run_cli("merge-hits", *[tmp_path / f"part{s}.hits" for s in (2, 0, 1)],
                   *scoring, "--out-blast", tmp_path / "m.m8", "--out-tsv", tmp_path / "m.tsv",
                   "--out-sam", tmp_path / "m.sam") == 0
    for one, merged in (("one.m8", "m.m8"), ("one.tsv", "m.tsv")):
        assert (tmp_path / one).read_bytes() == (tmp_path / merged).read_bytes()

    def body(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("@PG")]

    assert body(tmp_path / "one.sam") == body(tmp_path / "m.sam")
    source = "maximum-likelihood fit" if scoring else "NCBI BLAST table"
    assert source in (tmp_path / "one.tsv").read_text()
    rows = read_blast_tab(tmp_path / "one.m8")
    assert len(rows) == 16 and all(r["qstart"] <= r["qend"] and r["sstart"] <= r["send"] for r in rows)


def test_cli_dna_shards_searched_without_scoring_options_merge_without_them(tmp_path):
    """search picks DNA scoring for DNA files by itself; merge-hits, given no scoring options either,
    takes the shards' DNA defaults (it stopped with 'computed with match=2,... but the scoring options
    give BLOSUM62')."""
    rng = np.random.default_rng(4)
    genome = "".join(rng.choice(list("ACGT"), 2000))
    (tmp_path / "db.fa").write_text("".join(f">c{k}\n{genome[k * 500:(k + 1) * 500]}\n" for k in range(4)))
    (tmp_path / "q.fa").write_text(f">q1\n{genome[100:220]}\n>q2\n{genome[1400:1470]}\n")
    common = ["-q", tmp_path / "q.fa", "-d", tmp_path / "db.fa", "--top", 3]
    assert run_cli("search", *common, "--out-tsv", tmp_path / "one.tsv") == 0
    for shard in range(2):
        assert run_cli("search", *common, "--shards", 2, "--shard", shard,
                       "--out-hits", tmp_path / f"p{shard}.hits") == 0
    assert run_cli("merge-hits", tmp_path / "p0.hits", tmp_path / "p1.hits",
                   "--out-tsv", tmp_path / "m.tsv") == 0
    assert (tmp_path / "m.tsv").read_bytes() == (tmp_path / "one.tsv").read_bytes()
    assert run_cli("merge-hits", tmp_path / "p0.hits", tmp_path / "p1.hits", "--gap-open", 4,
                   "--out-tsv", tmp_path / "x.tsv") == 2  # other scoring options than the search's


def test_cli_evalue_and_max_hits_filter_like_blast(tmp_path, fixture_paths, capsys, caplog):
    caplog.set_level("INFO", logger="gpualign")
    query, db = fixture_paths
    assert run_cli("search", "-q", query, "-d", db, "--top", 6, "--out-blast", tmp_path / "all.m8") == 0
    rows = read_blast_tab(tmp_path / "all.m8")
    values = sorted({r["evalue"] for r in rows})
    cut = math.sqrt(values[len(values) // 2] * values[len(values) // 2 + 1])  # between two printed values
    assert run_cli("search", "-q", query, "-d", db, "--max-hits", 6, "--evalue", cut,
                   "--out-blast", tmp_path / "some.m8") == 0
    kept = [r for r in rows if r["evalue"] <= cut]
    assert 0 < len(kept) < len(rows)
    assert read_blast_tab(tmp_path / "some.m8") == kept
    assert f"{len(kept)} hits of" in caplog.records[-1].message  # the hits reported, not those chosen
    capsys.readouterr()
    assert run_cli("search", "-q", query, "-d", db, "--evalue", 0, "--out-blast", tmp_path / "x.m8") == 2
    assert "--evalue must be a positive number" in capsys.readouterr().err


def test_cli_dna_minus_strand_blast_coordinates(tmp_path):
    rng = np.random.default_rng(2)
    target = "".join(rng.choice(list("ACGT"), 300))
    piece = target[100:160]
    rc = piece[::-1].translate(str.maketrans("ACGT", "TGCA"))
    (tmp_path / "q.fa").write_text(f">q\n{rc}\n")
    (tmp_path / "db.fa").write_text(f">t\n{target}\n")
    assert run_cli("search", "-q", tmp_path / "q.fa", "-d", tmp_path / "db.fa", "--match", 2,
                   "--mismatch", -3, "--top", 1, "--out-blast", tmp_path / "o.m8") == 0
    row = read_blast_tab(tmp_path / "o.m8")[0]
    assert (row["qstart"], row["qend"], row["sstart"], row["send"]) == (1, 60, 160, 101)
    assert row["pident"] == 100.0 and row["length"] == 60


@pytest.mark.parametrize("case", ["bad_residue", "shard_with_blast", "missing_shard", "no_output",
                                  "query_name_too_long_for_sam", "target_name_not_for_sam",
                                  "two_outputs_one_file",
                                  "evalue_in_a_shard_job"])
def test_cli_bad_input_is_one_line_exit_2_and_no_output(tmp_path, fixture_paths, capsys, case):
    query, db = fixture_paths
    out = tmp_path / "o.m8"
    if case == "bad_residue":
        (tmp_path / "db.fa").write_text(">a\nMKV\n>b\nMK1V\n")
        args = ["search", "-q", query, "-d", tmp_path / "db.fa", "--out-blast", out]
        expected = "record 'b': position 3"
    elif case == "shard_with_blast":
        args = ["search", "-q", query, "-d", db, "--shards", 2, "--out-blast", out]
        expected = "merge-hits"
    elif case == "missing_shard":
        assert run_cli("search", "-q", query, "-d", db, "--shards", 2, "--shard", 0,
                       "--out-hits", tmp_path / "p0.hits") == 0
        args = ["merge-hits", tmp_path / "p0.hits", "--out-blast", out]
        expected = "shard(s) 1 of 2 missing"
    elif case == "query_name_too_long_for_sam":
        # SAM's QNAME holds 254 characters at most (pysam raised ValueError after the search).
        (tmp_path / "q.fa").write_text(">q" + "x" * 299 + " long\nMKVLAAGIVGLLLAW\n")
        args = ["search", "-q", tmp_path / "q.fa", "-d", db, "--out-blast", out,
                "--out-sam", tmp_path / "o.sam"]
        expected = "record 'q" + "x" * 299 + "': query name of 300 characters"
    elif case == "target_name_not_for_sam":
        # A comma in a reference name splits the SA tags naming it; the SAM came out invalid.
        (tmp_path / "db.fa").write_text(">chr1,alt\nMKVLAAGIVGLLLAWMKVLAAG\n")
        args = ["search", "-q", query, "-d", tmp_path / "db.fa", "--out-blast", out,
                "--out-sam", tmp_path / "o.sam"]
        expected = "record 'chr1,alt': target name is not a SAM reference name"
    elif case == "two_outputs_one_file":
        # BLAST tabular and the TSV both renamed onto o.m8: the table was silently lost.
        args = ["search", "-q", query, "-d", db, "--out-blast", out, "--out-tsv", tmp_path / "." / "o.m8"]
        expected = "--out-blast and --out-tsv name the same file"
    elif case == "evalue_in_a_shard_job":
        # The .hits file keeps every top hit and merge-hits cuts at its own --evalue: the shard
        # job's cut was silently dropped (merged outputs held hits above it).
        out = tmp_path / "p0.hits"
        args = ["search", "-q", query, "-d", db, "--shards", 2, "--evalue", 1e-5, "--out-hits", out]
        expected = "give --evalue to 'gpualign merge-hits'"
    else:
        args = ["search", "-q", query, "-d", db]
        expected = "no output requested"
    capsys.readouterr()
    assert run_cli(*args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and expected in err and "\n" not in err
    assert not out.exists()


@pytest.mark.skipif(shutil.which("ssearch36") is None, reason="ssearch36 (Debian package fasta3) absent")
def test_raw_scores_equal_ssearch36(tmp_path, fixture_paths, proteins):
    # FASTA's -f is the gap-open penalty and -g the cost of every gap residue: -f -11 -g -1 is
    # a gap of k costing 11 + k, our open 11 extend 1.
    query, db = fixture_paths
    text = subprocess.run(["ssearch36", "-q", "-m", "10", "-s", "BL62", "-f", "-11", "-g", "-1",
                           "-b", "100", "-d", "100", "-E", "1e6", "-z", "-1", query, db],
                          capture_output=True, text=True, check=True).stdout
    reported, q, t = {}, None, None
    for line in text.splitlines():
        if line.startswith(">>>") and not line.startswith(">>><<<"):
            q = line[3:].split(",")[0].split()[0]
        elif line.startswith(">>"):
            t = line[2:].split()[0]
        elif line.startswith("; sw_score:"):
            reported[(q, t)] = int(line.split()[-1])
    queries, targets = proteins
    scores = score_database([x.codes for x in queries], [x.codes for x in targets], PROTEIN)
    q_index = {x.id: k for k, x in enumerate(queries)}
    t_index = {x.id: k for k, x in enumerate(targets)}
    assert len(reported) == len(queries) * len(targets)
    for (q, t), value in reported.items():
        assert scores[q_index[q], t_index[t]] == value, (q, t)


@pytest.mark.skipif(shutil.which("blastp") is None, reason="blastp (Debian package ncbi-blast+) absent")
def test_the_blastp_matrix_gives_blastps_lines_on_sequences_with_x_b_z_j_u_and_o(tmp_path):
    """Biopython's ``BLASTP`` matrix is BLOSUM62 as blastp holds it: its X, B and Z rows differ from
    NCBI's published file (X/A -1 against 0, B/N 4 against 3) and it has J, U and O rows. With it,
    a database record and a query carrying all six letters give blastp's tabular lines, E-values
    and bit scores (BLOSUM62's statistics) included. (blastp's heuristics miss two globins at
    E 8e-13 and 6e-9 here, which we list, and give a weak 18-residue hit of LGB2_LUPLU where the
    exact local optimum is longer: only its significant lines are compared.)"""
    records = {r.id: r.text for r in read_fasta(os.path.join(DATA, "globins.fasta"), PROTEIN)}
    query, edited = list(records.pop("HBB_HUMAN")), list(records.pop("HBA_HUMAN"))
    for position, letter in zip((3, 10, 17, 25, 40, 55, 70, 90, 100, 120), "XBZJUOXJBZ"):
        edited[position] = letter
    for position, letter in zip((8, 30, 50, 80, 110), "JXZUB"):
        query[position] = letter
    (tmp_path / "q.fa").write_text(">hbb\n" + "".join(query) + "\n")
    records = {"hba": "".join(edited), "HBB_HUMAN": "".join(query).replace("J", "L"), **records}
    (tmp_path / "db.fa").write_text("".join(f">{name}\n{text}\n" for name, text in records.items()))
    subprocess.run(["makeblastdb", "-in", tmp_path / "db.fa", "-dbtype", "prot", "-out", tmp_path / "db"],
                   check=True, capture_output=True)
    theirs = subprocess.run(["blastp", "-query", tmp_path / "q.fa", "-db", tmp_path / "db", "-outfmt", "6",
                             "-comp_based_stats", "0", "-seg", "no", "-max_target_seqs", "10"],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    assert run_cli("search", "--query", tmp_path / "q.fa", "--db", tmp_path / "db.fa", "--matrix", "BLASTP",
                   "--backend", "cpu", "--top", "10", "--out-blast", tmp_path / "ours.tsv") == 0
    ours = (tmp_path / "ours.tsv").read_text().splitlines()
    significant = [line for line in theirs if float(line.split("\t")[10]) < 1e-20]
    assert [line.split("\t")[1] for line in significant] == ["HBB_HUMAN", "HBB_HORSE", "HBA_HORSE", "hba"]
    assert ours[:4] == significant


def test_karlin_altschul_bits_and_evalue_are_consistent():
    ka = KarlinAltschul(0.267, 0.041, "test")
    for score in (20, 50, 200):
        # E = m N 2^(-bits), the identity BLAST users rely on.
        assert ka.evalue(score, 300, 10**6) == pytest.approx(300 * 10**6 * 2 ** -ka.bit_score(score))


# --- GPU backend: host-side planning and the CLI on a machine without a GPU -------------------

def test_gpu_work_items_cover_every_live_pair_once_largest_first():
    from gpualign_plugin.search.gpu import plan_items

    query_lengths = np.array([0, 5, 300, 40, 2000])
    widths = np.array([0, 3, 64, 700, 5000])
    iq, ib, jq, jb = plan_items(query_lengths, widths, pair_cells=100_000, max_width=4096)
    inter = set(zip(iq.tolist(), ib.tolist()))
    intra = set(zip(jq.tolist(), jb.tolist()))
    live = {(q, b) for q in range(5) for b in range(5) if query_lengths[q] * widths[b] > 0}
    assert inter | intra == live and not inter & intra and len(iq) == len(inter)
    # Intra-task: more cells than pair_cells, or a batch wider than max_width.
    assert intra == {(q, b) for q, b in live if query_lengths[q] * widths[b] > 100_000 or widths[b] > 4096}
    cells = query_lengths[iq] * widths[ib]
    assert (np.diff(cells) <= 0).all()
    everything, _, none_q, _ = plan_items(query_lengths, widths, pair_cells=None)
    assert len(everything) == len(live) and len(none_q) == 0


def test_gpu_launch_ranges_cover_the_items_in_order():
    from gpualign_plugin.search.gpu import launch_ranges

    rng = np.random.default_rng(4)
    cells = np.sort(rng.integers(1, 1000, 500))[::-1]
    for limit, most in ((1, 1 << 30), (2500, 1 << 30), (10**9, 1 << 30), (2500, 3)):
        ranges = launch_ranges(cells, limit, most)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(cells)
        assert all(a < b and b - a <= most for a, b in ranges)
        assert all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
        assert all(cells[a:b].sum() <= limit or b - a == 1 for a, b in ranges)
    assert launch_ranges(np.array([], dtype=np.int64)) == []


def test_gpu_chains_cut_long_items_into_consecutive_row_blocks():
    from gpualign_plugin.search.gpu import chain_bytes, chained_items, plan_tasks

    rows = np.array([100, 64, 40, 32, 7, 65])
    widths = np.array([5000, 3000, 10, 9000, 9000, 200])
    # 100 x 5000 and 64 x 3000 are above 100,000 cells a lane: chains of ceil(rows / 32) tasks;
    # 32 x 9000 and 7 x 9000 too, but one task already holds their rows; the rest stay whole.
    split = chained_items(rows, widths, 100_000, warps=8, room=1 << 30, rows_per_task=32)
    assert split.tolist() == [True, True, False, False, False, False]
    task_item, task_row, task_chain, first_task = plan_tasks(rows, split, rows_per_task=32)
    assert task_item.tolist() == [0, 0, 0, 0, 1, 1, 2, 3, 4, 5]
    assert task_row.tolist() == [0, 32, 64, 96, 0, 32, 0, 0, 0, 0]
    assert task_chain.tolist() == [0, 0, 0, 0, 1, 1, -1, -1, -1, -1]
    assert first_task.tolist() == [0, 4, 6, 7, 8, 9, 10]
    # Every query row of every item is in exactly one task.
    for item, m in enumerate(rows):
        ends = [min(m, r + 32) if split[item] else m for r in task_row[task_item == item]]
        covered = np.concatenate([np.arange(r, e) for r, e in zip(task_row[task_item == item], ends)])
        assert sorted(covered.tolist()) == list(range(m))
    # Chains take memory, the largest item first: room for the first one only.
    room = int(chain_bytes(5000, 4))
    assert chained_items(rows, widths, 100_000, 8, room, 32).tolist() == [True] + [False] * 5
    # By default the limit is the mean cells a lane per resident warp: (500,000 + 192,000 + 400
    # + 288,000 + 63,000 + 13,000) / 4 = 239,100, so only the first item.
    assert chained_items(rows, widths, None, 4, 1 << 30, 32).tolist() == [True] + [False] * 5
    whole = plan_tasks(rows, np.zeros(6, dtype=bool))
    assert whole[0].tolist() == list(range(6)) and (whole[2] == -1).all() and (whole[1] == 0).all()


def test_gpu_scratch_slots_fit_the_budget_or_fail_with_numbers():
    from gpualign_plugin.runtime.kernels import GpuMemoryError
    from gpualign_plugin.search.gpu import scratch_slots

    assert scratch_slots(1000, 100, 10_000, 50) == 50
    assert scratch_slots(1000, 100, 3_050, 50) == 20
    with pytest.raises(GpuMemoryError, match="budget is .* MiB.*--chunk-residues"):
        scratch_slots(1000, 100, 1_050, 50)
    with pytest.raises(GpuMemoryError):
        scratch_slots(5000, 100, 1_000, 50)


def test_score_database_rejects_an_unknown_backend(proteins):
    queries, db = proteins
    with pytest.raises(ValueError, match="backend"):
        score_database([queries[0].codes], [db[0].codes], PROTEIN, backend="tpu")


def test_cli_gpu_backend_without_a_gpu_exits_2_with_one_line(tmp_path, fixture_paths, capsys):
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    query, db = fixture_paths
    out = tmp_path / "o.m8"
    capsys.readouterr()
    assert run_cli("search", "-q", query, "-d", db, "--backend", "gpu", "--out-blast", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpualign: error:") and "--backend gpu" in err[0]
    assert not out.exists()


def test_cli_auto_backend_falls_back_to_the_cpu_with_the_same_output(tmp_path, fixture_paths, caplog):
    import json

    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    query, db = fixture_paths
    caplog.set_level("INFO", logger="gpualign")
    for backend in ("cpu", "auto"):
        assert run_cli("search", "-q", query, "-d", db, "--top", 4, "--backend", backend,
                       "--out-blast", tmp_path / f"{backend}.m8", "--out-tsv", tmp_path / f"{backend}.tsv",
                       "--stats", tmp_path / f"{backend}.json") == 0
    assert any("running on the CPU" in r.message for r in caplog.records)
    for suffix in ("m8", "tsv"):
        assert (tmp_path / f"cpu.{suffix}").read_bytes() == (tmp_path / f"auto.{suffix}").read_bytes()
    stats = json.loads((tmp_path / "auto.json").read_text())
    assert stats["engine"] == "cpu" and stats["cells"] > 0
