"""Bad input and cancelled runs: one line naming the file, exit 2 (143 when a scheduler sends
SIGTERM), and nothing half-written left behind."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time

import pytest
from paths import RESOURCES

from gpualign_plugin.cli.main import main

LAMBDA = os.path.join(RESOURCES, "genomes", "lambda.fa")
PROTEIN_QUERIES = os.path.join(RESOURCES, "proteins", "queries.fa")
PROTEIN_DATABASE = os.path.join(RESOURCES, "proteins", "database.fa")
STRAIN = os.path.join(RESOURCES, "genomes", "strainA.fa")


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and "\n" not in err and "Traceback" not in err, err
    return err


def test_a_corrupt_gzip_fasta_is_one_line(tmp_path, capsys):
    # A valid gzip header and length, deflate data damaged in the middle: zlib's error, not a traceback.
    data = bytearray(gzip.compress(open(LAMBDA, "rb").read()))
    data[len(data) // 2:len(data) // 2 + 8] = b"\xff" * 8
    (tmp_path / "q.fa.gz").write_bytes(bytes(data))
    assert main(["pairwise", "-q", str(tmp_path / "q.fa.gz"), "-t", LAMBDA, "-o", str(tmp_path / "o.paf"),
                 "--backend", "cpu"]) == 2
    assert "q.fa.gz: cannot be read" in one_error_line(capsys)
    assert sorted(os.listdir(tmp_path)) == ["q.fa.gz"]


def test_a_folder_given_as_a_text_input_is_named(tmp_path, capsys):
    assert main(["best-pairs", "--paf", str(tmp_path), "--out", str(tmp_path / "p.txt")]) == 2
    assert "is a directory" in one_error_line(capsys)


@pytest.mark.parametrize("out, truth, message", [
    ("s.fa", "s.fa", "--out and --truth name the same file"),
    (LAMBDA, "t.tsv", "--reference and --out name the same file"),
])
def test_simulate_refuses_to_write_over_its_own_files(tmp_path, capsys, out, truth, message):
    before = open(LAMBDA, "rb").read()
    assert main(["simulate", "--reference", LAMBDA, "--out", str(tmp_path / out), "--truth",
                 str(tmp_path / truth), "--seed", "1"]) == 2
    assert message in one_error_line(capsys)
    assert open(LAMBDA, "rb").read() == before and os.listdir(tmp_path) == []


def test_simulate_refuses_a_negative_seed(tmp_path, capsys):
    assert main(["simulate", "--reference", LAMBDA, "--out", str(tmp_path / "s.fa"), "--truth",
                 str(tmp_path / "t.tsv"), "--seed", "-1"]) == 2
    assert "--seed must be 0 or more" in one_error_line(capsys)


@pytest.mark.parametrize("command, option", [("compare", "--prefix"), ("syntenic", "--out-prefix")])
def test_an_output_prefix_ending_in_a_folder_is_refused(tmp_path, capsys, command, option):
    (tmp_path / "d").mkdir()
    assert main([command, "-q", LAMBDA, "-t", LAMBDA, option, f"{tmp_path / 'd'}/", "--backend", "cpu"]) == 2
    assert "ends in a folder" in one_error_line(capsys)
    assert os.listdir(tmp_path / "d") == []


def test_sigterm_while_writing_removes_every_output(tmp_path):
    # As SLURM cancels a job or ends one past its time: the run stops as after Ctrl-C, exit 143.
    # The signal goes when the first output's temporary file appears; on a loaded machine the
    # run may still finish first, so up to three runs are made, and one must be cut mid-write.
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        process = subprocess.Popen([sys.executable, "-m", "gpualign_plugin.cli.main", "compare", "-q", STRAIN,
                                    "-t", LAMBDA, "-p", "c", "--backend", "cpu"], cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while process.poll() is None and not any(".part" in name for name in os.listdir(folder)):
            time.sleep(0.002)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
        if process.returncode == 0:
            continue  # done before the signal: nothing to check
        assert process.returncode == 128 + signal.SIGTERM, err
        assert err.strip().splitlines()[-1] == "gpualign: terminated"
        assert os.listdir(folder) == []
        return
    pytest.fail("three runs finished before SIGTERM reached them")


def test_a_truncated_blast_table_is_refused_by_triplets(tmp_path, capsys):
    hits = tmp_path / "a.m8"
    assert main(["search", "-q", PROTEIN_QUERIES, "-d", PROTEIN_DATABASE, "--top", "3", "--backend", "cpu",
                 "--out-blast", str(hits)]) == 0
    (tmp_path / "cut.m8").write_text(hits.read_text()[:-30])  # the last line loses its last columns
    capsys.readouterr()
    assert main(["triplets", "--hits", str(tmp_path / "cut.m8"), str(hits), "--out", str(tmp_path / "t.tsv")]) == 2
    assert "columns where the first line has 12" in one_error_line(capsys)
    assert not (tmp_path / "t.tsv").exists()


@pytest.mark.parametrize("column, value, message", [
    (0, "99", "is not a #query line's"),           # query_index
    (6, "X", "neither + nor -"),                    # strand
    (8, "-4", "coordinates outside the sequences"),  # query_start
    (12, "5=", "does not span the coordinates"),    # cigar
])
def test_merge_hits_refuses_a_hit_line_that_disagrees_with_the_file(tmp_path, capsys, column, value, message):
    shard = tmp_path / "s.hits"
    assert main(["search", "-q", PROTEIN_QUERIES, "-d", PROTEIN_DATABASE, "--top", "3", "--backend", "cpu",
                 "--out-hits", str(shard)]) == 0
    lines = shard.read_text().splitlines(keepends=True)
    header = next(k for k, line in enumerate(lines) if not line.startswith("#"))
    fields = lines[header + 1].rstrip("\n").split("\t")
    fields[column] = value
    lines[header + 1] = "\t".join(fields) + "\n"
    shard.write_text("".join(lines))
    capsys.readouterr()
    assert main(["merge-hits", str(shard), "--out-blast", str(tmp_path / "m.m8")]) == 2
    err = one_error_line(capsys)
    assert f"line {header + 2}: malformed line" in err and message in err
    assert not (tmp_path / "m.m8").exists()


PAF_LINE = "q1\t100\t0\t100\t+\tt1\t200\t50\t150\t98\t100\t60\tNM:i:2\n"
MAF = "##maf version=1\n\na score=10\ns t1 50 4 + 200 AC-GT\ns q1 0 5 + 100 ACTGT\n\n"


@pytest.mark.parametrize("kind, good, cut, message", [
    ("paf", PAF_LINE, "\t".join(PAF_LINE.split("\t")[:6]) + "\n", "line 1: 6 tab-separated columns"),
    ("paf", PAF_LINE, PAF_LINE[:-1], "line 1: the last line has no line end"),
    ("maf", MAF, MAF.replace("AC-GT", "AC-G"), "line 4: a MAF line cut short or malformed"),
])
def test_merge_alignments_refuses_a_shard_cut_short(tmp_path, capsys, kind, good, cut, message):
    (tmp_path / f"a.{kind}").write_text(good)
    (tmp_path / f"b.{kind}").write_text(cut)
    out = tmp_path / f"m.{kind}"
    arguments = ["merge-alignments", f"--{kind}", str(tmp_path / f"a.{kind}"), str(tmp_path / f"b.{kind}"),
                 f"--out-{kind}", str(out)]
    assert main(arguments[:3] + arguments[4:]) == 0 and out.read_text().count(good.splitlines()[-1]) >= 1
    out.unlink()
    capsys.readouterr()
    assert main(arguments) == 2
    assert f"b.{kind}: {message}" in one_error_line(capsys) and not out.exists()


@pytest.mark.parametrize("options, message", [
    (["--tasks", "score", "--sizes", "0x100"], "size '0x100': both numbers must be 1 or more"),
    (["--tasks", "fold", "--fold-many", "0x0"], "size '0x0': both numbers must be 1 or more"),
    (["--divergence", "2"], "--divergence is a rate between 0 and 1"),
])
def test_bench_refuses_sizes_and_rates_it_cannot_run(capsys, options, message):
    assert main(["bench", "--backend", "cpu", *options]) == 2
    assert message in one_error_line(capsys)


def test_merge_alignments_says_a_damaged_bam_in_one_line(tmp_path, capfd):
    # htslib's own messages and pysam's error on freeing its half-made file object used to
    # come before the one line (a traceback among them).
    import pysam

    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": "t", "LN": 100}]}
    with pysam.AlignmentFile(str(tmp_path / "a.bam"), "wb", header=header) as out:
        record = pysam.AlignedSegment(out.header)
        record.query_name, record.query_sequence, record.reference_id = "q", "ACGT", 0
        record.reference_start, record.cigarstring, record.mapping_quality = 10, "4M", 60
        out.write(record)
    pysam.index(str(tmp_path / "a.bam"))
    data = bytearray((tmp_path / "a.bam").read_bytes())
    data[40:48] = b"\xff" * 8  # inside the first BGZF block's deflate stream
    (tmp_path / "b.bam").write_bytes(bytes(data))
    capfd.readouterr()
    assert main(["merge-alignments", "--bam", str(tmp_path / "a.bam"), str(tmp_path / "b.bam"),
                 "--out-bam", str(tmp_path / "m.bam")]) == 2
    err = capfd.readouterr().err.strip()
    assert err.startswith("gpualign: error:") and "b.bam: not a readable BAM file" in err and "\n" not in err, err
    assert not (tmp_path / "m.bam").exists()


@pytest.mark.parametrize("argv, message", [
    (["pairwise", "-q", "x.fa", "--min-score", "abc"], "argument --min-score: invalid int value: 'abc'"),
    (["pairwise"], "the following arguments are required: -q/--query"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
    (["--local-gpus", "x", "fold"], "argument --local-gpus: invalid int value: 'x'"),
])
def test_option_errors_are_one_line_naming_the_help(capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith("gpualign: error: ") and message in err and "--help')" in err


def test_split_refuses_a_character_no_alphabet_has(tmp_path, capsys):
    # Its parts would fail the next step, which would name the part and not this file.
    (tmp_path / "in.fa").write_text(">a\nACGT\n>b desc\nACG7T\n")
    assert main(["split", "--fasta", str(tmp_path / "in.fa"), "--parts", "2", "--out-dir", str(tmp_path / "p")]) == 2
    assert "in.fa: record 'b': position 4: character '7' is no DNA or protein letter" in one_error_line(capsys)
    assert not (tmp_path / "p").exists() or os.listdir(tmp_path / "p") == []
