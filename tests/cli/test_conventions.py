"""Command-line conventions: scoring defaults follow the sequences, output directories are
made as needed, counts read as English, global options stand anywhere."""

from __future__ import annotations

import logging

import pytest

from gpualign_plugin.cli.common import counted, detected_kind, sequence_kind
from gpualign_plugin.cli.main import main

PROTEINS = ">p1\nMKVLHEEQRSTWACDEFGHIKLMNPQRSTVWY\n>p2\nMKVLHEQRSTWACDEFGHIKLLNPQRSTVWY\n"
TARGET_PROTEIN = ">t\nGGMKVLHEEQRSTWACDFGHIKLMNPQRSTVWYGG\n"
DNA_QUERY = ">d1\nACGTTGCAAGCTTGACCGTAGGCTA\n"
DNA_TARGET = ">dt\nTTTTACGTTGCAAGCTAGACCGTAGGCTATTTT\n"


@pytest.fixture
def run(caplog):
    """Run ``gpualign *argv``; return the exit status and the log lines ('gpualign: ...')."""
    def call(*argv):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="gpualign"):
            status = main(list(argv))
        return status, "\n".join(f"gpualign: {message}" for message in caplog.messages)
    return call


def test_sequence_kind():
    assert sequence_kind("ACGT") == "dna" and sequence_kind("acgun") == "dna"
    assert sequence_kind("ACGTRYKM") == "dna"  # IUPAC codes
    assert sequence_kind("MKVLHEEQRSTW") == "protein" and sequence_kind("ME*") == "protein"


def test_detected_kind_needs_every_file_to_agree(tmp_path):
    (tmp_path / "p.fa").write_text(PROTEINS)
    (tmp_path / "d.fa").write_text(DNA_QUERY)
    assert detected_kind([tmp_path / "p.fa"]) == "protein"
    assert detected_kind([tmp_path / "d.fa"]) == "dna"
    assert detected_kind([tmp_path / "p.fa", tmp_path / "d.fa"]) is None
    assert detected_kind([tmp_path / "missing.fa"]) is None
    assert detected_kind([tmp_path / "d.fa", tmp_path / "missing.fa"]) == "dna"


def test_a_protein_database_led_by_a_glycine_rich_record_is_protein_and_searched(tmp_path):
    # The first record's letters are all A, C, G, T (a Gly/Ala-rich protein); the file's first
    # records together are protein: makedb and search take it with BLOSUM62, and the record is read.
    from gpualign_plugin.cli.main import main

    (tmp_path / "db.fa").write_text(">grp\nGGAGGGAGGGTGGGAGGAGGCGG\n" + PROTEINS)
    (tmp_path / "q.fa").write_text(">grp_query\nMKVLGGAGGGAGGGTGGGAGGAGGCGGW\n")
    assert detected_kind([tmp_path / "db.fa"]) == "protein"
    assert main(["makedb", "--db", str(tmp_path / "db.fa"), "--out", str(tmp_path / "db.gadb")]) == 0
    assert main(["search", "-q", str(tmp_path / "q.fa"), "-d", str(tmp_path / "db.gadb"), "--matrix",
                 "BLOSUM62", "--backend", "cpu", "--out-blast", str(tmp_path / "hits.m8")]) == 0
    assert (tmp_path / "hits.m8").read_text().split("\t")[1] == "grp"


SAID_PROTEIN = ("gpualign: the sequences look like protein: scoring with BLOSUM62, gap open 11, "
                "extend 1 (--matrix or --match/--mismatch choose otherwise)")
SAID_DNA = ("gpualign: the sequences look like DNA: scoring with match 2, mismatch -3, gap open 5, "
            "extend 2 (--matrix or --match/--mismatch choose otherwise)")


@pytest.mark.parametrize("command, target_option, out_option, out_name, query, target, explicit, said", [
    # protein to pairwise (a DNA subcommand by default), DNA to search (protein by default)
    ("pairwise", "-t", "--out", "x.paf", PROTEINS, TARGET_PROTEIN, ["--matrix", "BLOSUM62"],
     SAID_PROTEIN),
    ("search", "--db", "--out-blast", "x.tsv", DNA_QUERY, DNA_TARGET,
     ["--match", "2", "--mismatch", "-3"], SAID_DNA),
], ids=["protein_to_pairwise", "dna_to_search"])
def test_scoring_defaults_follow_the_sequences_and_one_line_says_so(
        tmp_path, run, command, target_option, out_option, out_name, query, target, explicit, said):
    (tmp_path / "q.fa").write_text(query)
    (tmp_path / "t.fa").write_text(target)
    common = [command, "-q", str(tmp_path / "q.fa"), target_option, str(tmp_path / "t.fa"),
              "--backend", "cpu"]
    status, err = run(*common, out_option, str(tmp_path / "auto" / out_name))
    assert status == 0, err
    assert [line for line in err.splitlines() if "look like" in line] == [said]
    status, err = run(*common, *explicit, out_option, str(tmp_path / "given" / out_name))
    assert status == 0 and "look like" not in err
    assert (tmp_path / "auto" / out_name).read_text() == (tmp_path / "given" / out_name).read_text() != ""


def test_output_directories_are_made_and_counts_agree(tmp_path, run):
    (tmp_path / "q.fa").write_text(DNA_QUERY)
    (tmp_path / "t.fa").write_text(DNA_TARGET)
    status, err = run("pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"),
                      "--backend", "cpu", "--out", str(tmp_path / "new" / "deep" / "x.bam"),
                      "--stats", str(tmp_path / "other" / "s.json"))
    assert status == 0, err
    assert (tmp_path / "new" / "deep" / "x.bam").stat().st_size > 0
    assert (tmp_path / "new" / "deep" / "x.bam.bai").exists()
    assert (tmp_path / "other" / "s.json").exists()
    assert "gpualign: 1 alignment of 1 query (cpu" in err
    (tmp_path / "pairs.txt").write_text("d1 dt\n")
    status, err = run("syntenic", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"),
                      "--pairs", str(tmp_path / "pairs.txt"), "-o", str(tmp_path / "syn" / "x"),
                      "--backend", "cpu")
    assert status == 0, err
    assert (tmp_path / "syn" / "x.blocks.tsv").exists()
    assert "1 pair aligned" in err


def test_workflow_steps_say_what_they_did(tmp_path, run):
    # Each command a workflow rule runs leaves one line in the rule's log (stderr); before,
    # split, merge-alignments, best-pairs and triplets wrote nothing, so their logs were empty.
    (tmp_path / "q.fa").write_text(DNA_QUERY + ">d2\nACGTTGCAAGCTT\n")
    (tmp_path / "t.fa").write_text(DNA_TARGET)
    status, err = run("split", "--fasta", str(tmp_path / "q.fa"), "--parts", "2",
                      "--out-dir", str(tmp_path / "parts"))
    assert status == 0 and "gpualign: 2 records (38 residues) in 2 parts in " in err, err
    for part in ("000", "001"):
        assert run("pairwise", "-q", str(tmp_path / "parts" / f"{part}.fa"), "-t",
                   str(tmp_path / "t.fa"), "--backend", "cpu",
                   "--out", str(tmp_path / f"{part}.bam"), "--out", str(tmp_path / f"{part}.paf"))[0] == 0
    status, err = run("merge-alignments", "--bam", str(tmp_path / "000.bam"), str(tmp_path / "001.bam"),
                      "--paf", str(tmp_path / "000.paf"), str(tmp_path / "001.paf"),
                      "--out-bam", str(tmp_path / "all.bam"), "--out-paf", str(tmp_path / "all.paf"))
    assert status == 0, err
    assert f"gpualign: 2 BAM files merged into {tmp_path / 'all.bam'}" in err, err
    assert f"gpualign: 2 PAF files merged into {tmp_path / 'all.paf'}" in err, err
    status, err = run("best-pairs", "--paf", str(tmp_path / "all.paf"), "--out", str(tmp_path / "p.txt"))
    assert status == 0 and "gpualign: 1 query paired with a target (of 1 with an alignment)" in err, err
    (tmp_path / "set1.tsv").write_text("a\tx\t1\t1e-9\t50\nb\ty\t1\t1e-9\t50\n")
    (tmp_path / "set2.tsv").write_text("a\tz\t1\t1e-9\t50\n")
    status, err = run("triplets", "--hits", str(tmp_path / "set1.tsv"), str(tmp_path / "set2.tsv"),
                      "--out", str(tmp_path / "triplets.tsv"))
    assert status == 0 and "gpualign: 1 triplet (of 2 queries with a hit in the first set)" in err, err


@pytest.mark.parametrize("number, words, expected", [
    (0, ("query", "queries"), "0 queries"), (1, ("query", "queries"), "1 query"),
    (2, ("alignment",), "2 alignments"), (1, ("alignment",), "1 alignment")])
def test_counted(number, words, expected):
    assert counted(number, *words) == expected


def test_syntenic_scoring_defaults_follow_protein_sequences(tmp_path, run):
    # Before, syntenic built its scheme without looking at the files: protein records without
    # --matrix stopped with "character 'K' is not in the dna alphabet" although its help gives
    # a protein default block penalty (60).
    (tmp_path / "q.fa").write_text(PROTEINS.split(">p2")[0])
    (tmp_path / "t.fa").write_text(TARGET_PROTEIN)
    common = ["syntenic", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--backend", "cpu"]
    status, err = run(*common, "-o", str(tmp_path / "auto"))
    assert status == 0, err
    assert [line for line in err.splitlines() if "look like" in line] == [SAID_PROTEIN]
    status, err = run(*common, "--matrix", "BLOSUM62", "-o", str(tmp_path / "given"))
    assert status == 0 and "look like" not in err

    def blocks(prefix):
        return [line for line in (tmp_path / f"{prefix}.blocks.tsv").read_text().splitlines()
                if not line.startswith("# command")]
    assert blocks("auto") == blocks("given")
    assert "BLOSUM62" in blocks("auto")[0] and "block penalty 60" in blocks("auto")[0]


def test_outputs_to_a_pipe_are_streamed_and_a_closed_pipe_ends_quietly(tmp_path):
    """``--out /dev/stdout`` and the like: a search writes its SAM (no extension needed), BLAST and
    TSV lines to named pipes (two of them the same one), and a reader that goes away after the
    first line (``| head -1``) ends the command with SIGPIPE's status and no traceback."""
    import os
    import subprocess
    import sys
    import threading

    query, db = tmp_path / "q.fa", tmp_path / "db.fa"
    query.write_text(PROTEINS)
    db.write_text(TARGET_PROTEIN + PROTEINS.replace(">p", ">d"))
    pipes = {name: tmp_path / name for name in ("sam", "blast")}
    received = {}
    for name, pipe in pipes.items():
        os.mkfifo(pipe)
    readers = [threading.Thread(target=lambda n=n, p=p: received.__setitem__(n, p.read_text()))
               for n, p in pipes.items()]
    for reader in readers:
        reader.start()
    command = [sys.executable, "-m", "gpualign_plugin.cli.main", "search", "-q", query, "-d", db,
               "--backend", "cpu", "--out-sam", pipes["sam"], "--out-blast", pipes["blast"],
               "--out-tsv", pipes["blast"]]
    subprocess.run(command, check=True, capture_output=True)
    for reader in readers:
        reader.join()
    assert received["sam"].startswith("@HD") and received["sam"].count("\np1\t") >= 1
    assert received["blast"].count("p1\t") >= 4  # BLAST and TSV lines
    assert all(stat_is_fifo(pipe) for pipe in pipes.values())

    pipe = pipes["blast"]
    lines = []

    def first_line() -> None:
        with open(pipe) as handle:
            lines.append(handle.readline())

    reader = threading.Thread(target=first_line)
    reader.start()
    many = tmp_path / "many.fa"
    many.write_text("".join(f">q{k}\n{PROTEINS.splitlines()[1]}\n" for k in range(3000)))
    done = subprocess.run(command[:5] + [many, "-d", db, "--backend", "cpu", "--out-blast", pipe],
                          capture_output=True, text=True)
    reader.join()
    assert lines[0].startswith("q0\t")
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr


def stat_is_fifo(path) -> bool:
    import os
    import stat

    return stat.S_ISFIFO(os.stat(path).st_mode)


def test_inputs_read_from_a_pipe_are_read_once_and_errors_name_the_pipe(tmp_path):
    """``zcat db.fa.gz | gpualign search --db /dev/stdin``: the readers open an input several times
    (gzip and kind checks, then the records), so a pipe is copied once to a temporary file (in
    TMPDIR, removed after). Before, a piped FASTA was "empty" or "not a FASTA file"."""
    import gzip
    import os
    import subprocess
    import sys

    query, db = tmp_path / "q.fa", tmp_path / "db.fa"
    query.write_text(PROTEINS)
    db.write_text(TARGET_PROTEIN + PROTEINS.replace(">p", ">d"))
    spool = tmp_path / "tmp"
    spool.mkdir()
    environment = {**os.environ, "TMPDIR": str(spool)}
    command = [sys.executable, "-m", "gpualign_plugin.cli.main", "search", "--backend", "cpu"]
    subprocess.run(command + ["-q", query, "-d", db, "--out-blast", tmp_path / "files.tsv"],
                   env=environment, capture_output=True, check=True)
    subprocess.run(command + ["-q", "/dev/stdin", "-d", db, "--out-blast", tmp_path / "piped.tsv"],
                   input=gzip.compress(query.read_bytes()), env=environment, capture_output=True, check=True)
    assert (tmp_path / "piped.tsv").read_text() == (tmp_path / "files.tsv").read_text()
    bad = subprocess.run(command + ["-q", query, "-d", "/dev/stdin", "--out-blast", tmp_path / "bad.tsv"],
                         input=b">t\nMKV1LH\n", env=environment, capture_output=True, text=False)
    assert bad.returncode == 2 and not (tmp_path / "bad.tsv").exists()
    assert bad.stderr.decode().startswith("gpualign: error: /dev/stdin: record 't': position 4:")
    assert os.listdir(spool) == []
