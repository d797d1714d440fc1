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
    process = subprocess.Popen([sys.executable, "-m", "gpualign_plugin.cli.main", "compare", "-q", STRAIN,
                                "-t", LAMBDA, "-p", "c", "--backend", "cpu"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while process.poll() is None and not any(".part" in name for name in os.listdir(tmp_path)):
        time.sleep(0.002)
    assert process.poll() is None, "the run ended before it wrote its first output"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1] == "gpualign: terminated"
    assert os.listdir(tmp_path) == []
