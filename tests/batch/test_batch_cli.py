"""``gpualign batch``: the reference workload (1,000 pairs x 512 bp) end to end, pairs files, formats, errors."""

from __future__ import annotations

import json

import numpy as np
import pysam
import pytest

from gpualign_plugin.cli.main import main
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.io.paf import read_paf
from gpualign_plugin.model import Alignment, Cigar
from gpualign_plugin.scoring import ScoringScheme

from oracles import biopython_aligner, gotoh

DNA = ScoringScheme.dna()


def reference_workload(tmp_path, pairs: int = 1000, length: int = 512, seed: int = 1):
    """The GPU course project's workload: ``pairs`` pairs of ``length`` bp related by ~10% edits.

    Each target is its query with substitutions, insertions and deletions, so the
    local alignments are long and gapped (a realistic traceback), not random noise.
    """
    rng = np.random.default_rng(seed)
    queries, targets = [], []
    for k in range(pairs):
        query = rng.choice(list("ACGT"), length)
        target = []
        for base in query:
            event = rng.random()
            if event < 0.06:
                target.append(rng.choice(list("ACGT")))
            elif event < 0.08:
                continue
            elif event < 0.10:
                target.extend([base, rng.choice(list("ACGT"))])
            else:
                target.append(base)
        queries.append((f"q{k}", "".join(query)))
        targets.append((f"t{k}", "".join(target)))
    query_path, target_path = tmp_path / "queries.fa", tmp_path / "targets.fa"
    query_path.write_text("".join(f">{name}\n{text}\n" for name, text in queries))
    target_path.write_text("".join(f">{name}\n{text}\n" for name, text in targets))
    return query_path, target_path


def read_tsv(path):
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == ["qid", "tid", "score", "qstart", "qend", "tstart", "tend", "cigar",
                                    "strand"]
    return [line.split("\t") for line in lines[1:]]


def test_reference_workload_is_exact(tmp_path):
    query_path, target_path = reference_workload(tmp_path)
    out = tmp_path / "pairs.tsv"
    assert main(["batch", "-q", str(query_path), "-t", str(target_path), "--out", str(out),
                 "--stats", str(tmp_path / "stats.json")]) == 0
    rows = read_tsv(out)
    queries = read_fasta(query_path, DNA)
    targets = read_fasta(target_path, DNA)
    assert [(r[0], r[1]) for r in rows] == [(q.id, t.id) for q, t in zip(queries, targets)]
    aligner = biopython_aligner(DNA, "local")
    for k, row in enumerate(rows):
        score, q_start, q_end, t_start, t_end = (int(x) for x in row[2:7])
        alignment = Alignment(row[0], row[1], len(queries[k]), len(targets[k]), q_start, q_end,
                              t_start, t_end, "+", score, Cigar.from_string(row[7]))
        assert alignment.recompute_score(queries[k].codes, targets[k].codes, DNA) == score
        if k % 50 == 0:
            assert score == aligner.score(targets[k].text, queries[k].text)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["cells"] == sum(len(q) * len(t) for q, t in zip(queries, targets))


def test_pairs_file_and_every_format_agree_with_the_oracle(tmp_path):
    rng = np.random.default_rng(4)
    texts = ["".join(rng.choice(list("ACGT"), n)) for n in (30, 45, 25)]
    (tmp_path / "q.fa").write_text("".join(f">q{k}\n{t}\n" for k, t in enumerate(texts)))
    (tmp_path / "t.fa").write_text("".join(f">t{k}\n{t[5:]}{t[:5]}\n" for k, t in enumerate(texts)))
    (tmp_path / "pairs.txt").write_text("q0 t0\nq0 t1  # comment\nq2 t2\n")
    outs = [tmp_path / name for name in ("o.tsv", "o.sam", "o.paf")]
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--pairs",
                 str(tmp_path / "pairs.txt"), "--mode", "global", "--gap-open", "3"]
                + [x for out in outs for x in ("--out", str(out))]) == 0
    scheme = ScoringScheme.dna(gap_open=3)
    queries = {q.id: q for q in read_fasta(tmp_path / "q.fa", scheme)}
    targets = {t.id: t for t in read_fasta(tmp_path / "t.fa", scheme)}
    rows = read_tsv(outs[0])
    assert [(r[0], r[1]) for r in rows] == [("q0", "t0"), ("q0", "t1"), ("q2", "t2")]
    for row in rows:
        expected = gotoh(queries[row[0]].codes, targets[row[1]].codes, scheme.matrix, 3, 2, "global")
        assert (int(row[2]), row[7]) == (expected[0], expected[5])
    with pysam.AlignmentFile(str(outs[1])) as sam:
        records = list(sam)
    assert sorted(r.get_tag("AS") for r in records) == sorted(int(r[2]) for r in rows)
    assert sum(not r.is_secondary for r in records if r.query_name == "q0") == 1
    assert sorted(r["cg"] for r in read_paf(outs[2])) == sorted(row[7] for row in rows)


def test_local_pair_without_alignment_keeps_its_tsv_line_and_is_left_out_of_paf(tmp_path):
    (tmp_path / "q.fa").write_text(">q0\nAAAAAAAA\n>q1\nACGTACGT\n")
    (tmp_path / "t.fa").write_text(">t0\nCCCCCCCC\n>t1\nTTACGTACGTTT\n")
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"),
                 "--out", str(tmp_path / "o.tsv"), "--out", str(tmp_path / "o.paf")]) == 0
    assert read_tsv(tmp_path / "o.tsv") == [["q0", "t0", "0", "0", "0", "0", "0", "*", "+"],
                                            ["q1", "t1", "16", "0", "8", "2", "10", "8=", "+"]]
    assert [r["qname"] for r in read_paf(tmp_path / "o.paf")] == ["q1"]


def test_sam_header_records_the_arguments_main_was_given(tmp_path):
    (tmp_path / "q.fa").write_text(">q0\nACGTACGT\n")
    (tmp_path / "t.fa").write_text(">t0\nTTACGTACGTTT\n")
    args = ["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"),
            "--out", str(tmp_path / "o.sam")]
    assert main(args) == 0
    with pysam.AlignmentFile(str(tmp_path / "o.sam")) as handle:
        assert handle.header.to_dict()["PG"][0]["CL"] == " ".join(["gpualign"] + args)


@pytest.mark.parametrize("case", ["unequal", "unknown_id", "extension", "long_name"])
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, capsys, case):
    long_name = "q" * 300
    if case == "long_name":  # SAM's QNAME holds at most 254 characters (was a traceback)
        (tmp_path / "q.fa").write_text(f">{long_name}\nACGTACGT\n")
    else:
        (tmp_path / "q.fa").write_text(">q0\nACGTACGT\n>q1\nACGTTT\n")
    (tmp_path / "t.fa").write_text(">t0\nACGTACGT\n")
    out = tmp_path / {"extension": "o.xyz", "long_name": "o.sam"}.get(case, "o.tsv")
    args = ["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--out", str(out)]
    expected = {"unequal": "2 query records but 1 target records",
                "unknown_id": "target id 't9' is not in the target file",
                "extension": "cannot tell the output format",
                "long_name": "query name of 300 characters; SAM/BAM query names (QNAME) hold at most 254"}[case]
    if case == "unknown_id":
        (tmp_path / "pairs.txt").write_text("q0 t0\nq1 t9\n")
        args += ["--pairs", str(tmp_path / "pairs.txt")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and expected in err and "\n" not in err
    assert not out.exists()


def test_both_strands_keep_the_better_strand_per_pair_with_forward_coordinates(tmp_path):
    from gpualign_plugin.scoring import reverse_complement_text

    rng = np.random.default_rng(7)
    texts = ["".join(rng.choice(list("ACGT"), n)) for n in (40, 55, 30)]
    targets = ["GG" + reverse_complement_text(texts[0][3:35]) + "TT",  # the minus strand wins
               texts[1][5:50],                                         # the plus strand wins
               "ACGT" + texts[2] + reverse_complement_text(texts[2])]  # equal on both: plus
    (tmp_path / "q.fa").write_text("".join(f">q{k}\n{t}\n" for k, t in enumerate(texts)))
    (tmp_path / "t.fa").write_text("".join(f">t{k}\n{t}\n" for k, t in enumerate(targets)))
    for strand in ("plus", "both"):
        assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--strand",
                     strand, "--out", str(tmp_path / f"{strand}.tsv"), "--out",
                     str(tmp_path / f"{strand}.paf")]) == 0
    plus, both = read_tsv(tmp_path / "plus.tsv"), read_tsv(tmp_path / "both.tsv")
    assert [r[8] for r in plus] == ["+", "+", "+"] and [r[8] for r in both] == ["-", "+", "+"]
    assert both[1:] == plus[1:] and int(both[0][2]) > int(plus[0][2])
    queries = read_fasta(tmp_path / "q.fa", DNA)
    target_records = read_fasta(tmp_path / "t.fa", DNA)
    row = both[0]
    alignment = Alignment("q0", "t0", 40, len(targets[0]), int(row[3]), int(row[4]), int(row[5]),
                          int(row[6]), "-", int(row[2]), Cigar.from_string(row[7]))
    assert (alignment.query_start, alignment.query_end) == (3, 35)
    assert alignment.recompute_score(queries[0].codes, target_records[0].codes, DNA) == int(row[2])
    assert [r["strand"] for r in read_paf(tmp_path / "both.paf")][0] == "-"


def test_both_strands_with_protein_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "q.fa").write_text(">q0\nMKVLA\n")
    (tmp_path / "t.fa").write_text(">t0\nMKVLA\n")
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--matrix",
                 "BLOSUM62", "--strand", "both", "--out", str(tmp_path / "o.tsv")]) == 2
    err = capsys.readouterr().err.strip()
    assert "protein has one strand" in err and "\n" not in err
    assert not (tmp_path / "o.tsv").exists()


def test_gpu_backend_without_a_gpu_exits_2_with_one_line(tmp_path, capsys):
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    (tmp_path / "q.fa").write_text(">q0\nACGTACGT\n")
    (tmp_path / "t.fa").write_text(">t0\nACGTACGT\n")
    out = tmp_path / "o.tsv"
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--backend", "gpu",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--backend gpu" in err[0]
    assert not out.exists()


def test_no_pairs_align_to_nothing_without_loading_the_cpu_kernel(monkeypatch):
    # The GPU batch path hands its empty-sequence pairs to the CPU kernel, usually none: that must
    # not load (or compile) the Numba kernel in a GPU run.
    from gpualign_plugin.batch import api, cpu

    def refuse(*args):
        raise AssertionError("the CPU batch kernel was called")

    monkeypatch.setattr(cpu, "align_pairs_kernel", refuse)
    assert api.align_batch([], ScoringScheme.dna(), "local") == []
    with pytest.raises(AssertionError):
        api.align_batch([(np.zeros(3, np.uint8), np.zeros(4, np.uint8))], ScoringScheme.dna(), "local")


def test_batch_progress_counts_every_pairs_cells_on_both_strands():
    """The CPU engine reports each group's cells (both strands); a long pair's engine reports
    more than m n (score pass and traceback): the batch passes on exactly m n of it."""
    from gpualign_plugin.batch.api import _Capped, align_batch, align_batch_strands

    rng = np.random.default_rng(4)
    pairs = [(rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, n).astype(np.uint8))
             for m, n in [(30, 40), (1, 9), (120, 64)]]
    reports = []
    both = align_batch_strands(pairs, DNA, "local", "both", progress=reports.append)
    assert both == align_batch_strands(pairs, DNA, "local", "both")
    assert sum(reports) == 2 * sum(len(q) * len(t) for q, t in pairs)
    reports.clear()
    assert align_batch(pairs, DNA, "global", progress=reports.append) == align_batch(pairs, DNA, "global")
    assert sum(reports) == sum(len(q) * len(t) for q, t in pairs)
    passed = []
    capped = _Capped(100, passed.append)
    for cells in (30, 50, 40, 25):
        capped(cells)
    capped.finish()
    assert passed == [30, 50, 20] and sum(passed) == 100
    short = []
    capped = _Capped(100, short.append)
    capped(60)
    capped.finish()
    assert short == [60, 40]


def test_a_local_pair_without_an_alignment_is_an_unmapped_record_that_flagstat_counts(tmp_path):
    # As pairwise writes a query with nothing significant; PAF leaves it out, TSV has its 0 row.
    import shutil
    import subprocess

    (tmp_path / "q.fa").write_text(">read1\nACGTACGTTGCA\n>read2\nGGGG\n")
    (tmp_path / "t.fa").write_text(">win1\nTTACGTACGTTGCATT\n>win2\nCCCC\n")
    sam, bam = tmp_path / "o.sam", tmp_path / "o.bam"
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--strand", "plus",
                 "--out", str(sam), "--out", str(bam), "--backend", "cpu"]) == 0
    for path in (sam, bam):
        with pysam.AlignmentFile(str(path)) as handle:
            records = [(r.query_name, r.flag, r.reference_name, r.query_sequence) for r in handle]
        assert records == [("read1", 0, "win1", "ACGTACGTTGCA"), ("read2", 4, None, "GGGG")]
    if shutil.which("samtools"):
        stats = subprocess.run(["samtools", "flagstat", str(bam)], capture_output=True, text=True,
                               check=True).stdout
        assert stats.startswith("2 + 0 in total") and "1 + 0 mapped" in stats


@pytest.mark.parametrize("mode", ["semiglobal", "local"])
def test_both_strands_mapq_counts_the_strand_not_kept_as_pairwise_does(tmp_path, mode):
    # The strand a pair does not keep is an alignment of the query too: an equal score on it is
    # a tie (MAPQ 0), a lower one a second best, as gpualign pairwise ranks both strands.
    from gpualign_plugin.scoring import reverse_complement_text

    rng = np.random.default_rng(11)
    x, y = ("".join(rng.choice(list("ACGT"), 40)) for _ in range(2))
    damaged = y[:10] + ("A" if y[10] != "A" else "C") + y[11:30] + ("A" if y[30] != "A" else "C") + y[31:]
    (tmp_path / "q.fa").write_text(f">tie\n{x}\n>second\n{y}\n")
    (tmp_path / "t.fa").write_text(f">t_tie\nACGT{x}{reverse_complement_text(x)}\n"
                                   f">t_second\n{y}GGGG{reverse_complement_text(damaged)}\n")
    (tmp_path / "pairs.txt").write_text("tie t_tie\nsecond t_second\n")
    common = ["-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--pairs",
              str(tmp_path / "pairs.txt"), "--mode", mode, "--strand", "both"]
    assert main(["batch", *common, "--out", str(tmp_path / "batch.paf")]) == 0
    batch = {r["qname"]: r["mapq"] for r in read_paf(tmp_path / "batch.paf")}
    best, second = 80, 80 - 2 * (2 + 3)  # 40 matches; two of them mismatches on the minus strand
    assert batch == {"tie": 0, "second": 60 * (best - second) // best}
    if mode == "semiglobal":  # pairwise places local pieces by a rule of their own
        assert main(["pairwise", *common, "--out", str(tmp_path / "pairwise.paf")]) == 0
        assert {r["qname"]: r["mapq"] for r in read_paf(tmp_path / "pairwise.paf")} == batch


def test_a_pair_listed_twice_keeps_two_tsv_lines_but_is_one_placed_alignment(tmp_path):
    # As gpualign pairwise aligns a repeated pairs line once: the copy is no second placement
    # (it took MAPQ to 0 as a tie and wrote the same alignment again as a secondary record).
    rng = np.random.default_rng(12)
    x = "".join(rng.choice(list("ACGT"), 40))
    (tmp_path / "q.fa").write_text(f">q\n{x}\n")
    (tmp_path / "t.fa").write_text(f">t\nGG{x}GG\n")
    (tmp_path / "pairs.txt").write_text("q t\nq t\n")
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--pairs",
                 str(tmp_path / "pairs.txt"), "--out", str(tmp_path / "o.tsv"), "--out",
                 str(tmp_path / "o.paf"), "--out", str(tmp_path / "o.sam")]) == 0
    assert len(read_tsv(tmp_path / "o.tsv")) == 2
    assert [(r["qname"], r["mapq"], r["tp"]) for r in read_paf(tmp_path / "o.paf")] == [("q", 60, "P")]
    with pysam.AlignmentFile(str(tmp_path / "o.sam")) as sam:
        assert [(r.query_name, r.flag, r.mapping_quality) for r in sam] == [("q", 0, 60)]


def test_a_target_name_sam_cannot_hold_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "q.fa").write_text(">q\nACGTACGTAA\n")
    (tmp_path / "t.fa").write_text(">chr1,alt\nACGTACGTAA\n")
    assert main(["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--out",
                 str(tmp_path / "o.tsv"), "--out", str(tmp_path / "o.sam")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "record 'chr1,alt'" in err[0] and "reference name" in err[0]
    assert not (tmp_path / "o.tsv").exists() and not (tmp_path / "o.sam").exists()
