"""Streamed search output: each query's hits reach the files as they are aligned, the final
files are byte-identical to writing the whole result at once, and a failure leaves nothing."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import numpy as np
import pytest

from gpualign_plugin.cli.main import main
from gpualign_plugin.cli.search import passing, search_outputs
from gpualign_plugin.io.atomic import all_or_none
from gpualign_plugin.io.blasttab import write_blast_tab, write_hits_tsv
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.io.sam import write_alignments
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.search import api
from gpualign_plugin.search.api import finish, search
from paths import DATA, REPO

DEMO = (os.path.join(REPO, "resources", "proteins", "queries.fa"),
        os.path.join(REPO, "resources", "proteins", "database.fa"))


def _random_dna(tmp_path):
    """Six queries cut from a random genome (odd ones reverse-complemented) and 20 targets."""
    rng = np.random.default_rng(7)
    genome = "".join(rng.choice(list("ACGT"), 24_000))
    (tmp_path / "db.fa").write_text("".join(f">t{i}\n{genome[i * 1200:(i + 1) * 1200]}\n" for i in range(20)))
    queries = []
    for i in range(6):
        piece = genome[i * 3900 + 50:i * 3900 + 350]
        queries.append(piece[::-1].translate(str.maketrans("ACGT", "TGCA")) if i % 2 else piece)
    (tmp_path / "q.fa").write_text("".join(f">q{i}\n{s}\n" for i, s in enumerate(queries)))
    return str(tmp_path / "q.fa"), str(tmp_path / "db.fa")


CASES = {
    "demo-proteins": (lambda tmp: DEMO, [], ScoringScheme.from_matrix("BLOSUM62", 11, 1), "plus", None),
    "fixture-fitted-evalue": (lambda tmp: (os.path.join(DATA, "search_queries.fa"),
                                           os.path.join(DATA, "search_db.fa")),
                              ["--gap-open", "3", "--gap-extend", "3", "--evalue", "1e-2"],
                              ScoringScheme.from_matrix("BLOSUM62", 3, 3), "plus", 1e-2),
    "random-dna-both-strands": (_random_dna, ["--match", "2", "--mismatch", "-3", "--top", "3"],
                                ScoringScheme.dna(2, -3), "both", None),
}


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("stream_pairs", [1, api.STREAM_PAIRS], ids=["a-block-per-query", "default-blocks"])
@pytest.mark.parametrize("case", list(CASES))
def test_streamed_files_equal_the_whole_result_written_at_once(tmp_path, monkeypatch, case, stream_pairs,
                                                               backend):
    paths, options, scheme, strands, evalue = CASES[case]
    query, db = paths(tmp_path)
    monkeypatch.setattr(api, "STREAM_PAIRS", stream_pairs)
    top = 3 if "--top" in options else 10
    assert main(["search", "-q", query, "-d", db, *options, "--backend", backend,
                 "--out-blast", str(tmp_path / "s.m8"), "--out-tsv", str(tmp_path / "s.tsv"),
                 "--out-sam", str(tmp_path / "s.sam"), "--stats", str(tmp_path / "s.json")]) == 0
    phases = json.loads((tmp_path / "s.json").read_text())["extra"]["phases"]
    assert set(phases) == {"read_s", "score_s", "align_write_s", "total_s", "process_start_to_run_s"}
    assert min(phases.values()) >= 0
    assert phases["read_s"] + phases["score_s"] + phases["align_write_s"] <= phases["total_s"] + 1e-6
    queries, targets = read_fasta(query, scheme), read_fasta(db, scheme)
    result = finish(search(queries, enumerate(targets), scheme, sum(map(len, targets)), len(targets),
                           top, strands), scheme)
    result.hits = passing(result.hits, evalue)
    assert result.hits, "the case must report hits"
    write_blast_tab(tmp_path / "w.m8", result.hits)
    write_hits_tsv(tmp_path / "w.tsv", result, scheme)
    write_alignments(tmp_path / "w.sam", [hit.alignment for hit in result.hits], {q.id: q for q in queries},
                     targets, scheme, "x", fmt="sam")
    for suffix in ("m8", "tsv"):
        assert (tmp_path / f"s.{suffix}").read_bytes() == (tmp_path / f"w.{suffix}").read_bytes()

    def body(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("@PG")]

    assert body(tmp_path / "s.sam") == body(tmp_path / "w.sam")


def test_hits_reach_the_temporary_file_per_query_and_a_failure_leaves_nothing(tmp_path):
    scheme = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
    queries, targets = read_fasta(DEMO[0], scheme), read_fasta(DEMO[1], scheme)
    stream = api.search_stream(queries, enumerate(targets), scheme, sum(map(len, targets)), len(targets))
    header = dataclasses.replace(stream.result, parameters=api.statistics_of(stream.result, scheme))
    args = argparse.Namespace(out_blast=str(tmp_path / "o.m8"), out_tsv=str(tmp_path / "o.tsv"),
                              out_sam=None)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with all_or_none() as written, \
                search_outputs(args, header, scheme, queries, [t.id for t in targets],
                               [len(t) for t in targets], written) as add:
            for q, hits in stream.by_query():
                add(api.finish_hits(header, hits, header.parameters))
                parts = sorted(p for p in os.listdir(tmp_path) if p.startswith(".o.m8."))
                assert len(parts) == 1 and not (tmp_path / "o.m8").exists()
                seen.append((tmp_path / parts[0]).read_text().count("\n"))
                if q == 1:
                    raise KeyboardInterrupt  # as a user's Ctrl-C halfway through the queries
    assert seen[0] > 0 and seen[1] > seen[0]  # query 0's lines were on disk before query 1's
    assert os.listdir(tmp_path) == []


def test_a_bad_record_late_in_the_query_file_exits_2_and_leaves_nothing(tmp_path, capsys):
    text = open(DEMO[0]).read()
    (tmp_path / "q.fa").write_text(text + ">late\nMKVLA*J1Q\n")
    out = tmp_path / "out"
    assert main(["search", "-q", str(tmp_path / "q.fa"), "-d", DEMO[1], "--backend", "cpu",
                 "--out-blast", str(out / "o.m8"), "--out-tsv", str(out / "o.tsv"),
                 "--out-sam", str(out / "o.bam")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and "record 'late'" in err and "\n" not in err
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["q.fa"]
