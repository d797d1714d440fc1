"""Progress a person can read: a tqdm bar on a terminal, timestamped heartbeat lines elsewhere."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest
from paths import REPO

from gpualign_plugin.cli.common import Progress, heartbeat_seconds
from gpualign_plugin.errors import InputError

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ gpualign: pairwise: (\d+\.\d)% \(\S+ of 1\.00G cells\) "
                  r"in \d\d:\d\d, \S+ cells/s, (about \d\d:\d\d left|time left unknown)$")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_off_a_terminal_heartbeat_lines_come_while_work_goes_on(monkeypatch):
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0.1")
    stream = io.StringIO()
    with Progress(10**9, "pairwise", stream=stream) as progress:
        for _ in range(6):
            time.sleep(0.1)
            progress.advance(10**8)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3 and "\r" not in stream.getvalue()
    percentages = []
    for line in lines:
        match = LINE.match(line)
        assert match, line
        percentages.append(float(match.group(1)))
    assert percentages == sorted(percentages) and percentages[-1] > 0


def test_heartbeat_shows_life_while_nothing_advances(monkeypatch):
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0.05")
    stream = io.StringIO()
    with Progress(10**9, "pairwise", stream=stream):
        time.sleep(0.3)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2 and all(LINE.match(line) for line in lines)
    assert all("0.0%" in line and "time left unknown" in line for line in lines)


def test_heartbeat_off_and_bad_values(monkeypatch):
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0")
    stream = io.StringIO()
    with Progress(100, "x", stream=stream) as progress:
        progress.advance(100)
    assert stream.getvalue() == ""
    monkeypatch.delenv("GPUALIGN_HEARTBEAT_SECONDS")
    assert heartbeat_seconds() == 30.0
    for bad in ("soon", "-1"):
        monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", bad)
        with pytest.raises(InputError, match="GPUALIGN_HEARTBEAT_SECONDS"):
            heartbeat_seconds()


def test_on_a_terminal_a_bar_with_rate_and_time_left():
    stream = Terminal()
    with Progress(4 * 10**6, "align3", stream=stream) as progress:
        for _ in range(4):
            time.sleep(0.25)
            progress.advance(10**6)
    text = stream.getvalue()
    assert "align3" in text and "100%" in text and "4.00M/4.00M" in text
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d, +[\d.]+[kMG]? cells/s\]", text), text


def test_a_command_in_a_log_writes_heartbeats(tmp_path):
    """`gpualign align3` with stderr to a file (as under Snakemake): heartbeat lines appear."""
    fasta = tmp_path / "three.fa"
    rng = __import__("numpy").random.default_rng(5)
    fasta.write_text("".join(f">s{k}\n{''.join(rng.choice(list('ACGT'), size=150))}\n" for k in range(3)))
    env = dict(os.environ, GPUALIGN_HEARTBEAT_SECONDS="0.02",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "align3", "--fasta",
                             str(fasta), "--maf", str(tmp_path / "x.maf"), "--backend", "cpu"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    beats = [line for line in result.stderr.splitlines() if " gpualign: align3: " in line]
    assert beats and all(re.match(r"^\d{4}-\d\d-\d\dT\S+Z gpualign: align3: \d+\.\d% ", b) for b in beats)


def test_one_long_pair_moves_the_heartbeat(monkeypatch):
    """Off a terminal, the heartbeat of `gpualign pairwise` on the CPU shows cells growing during
    ONE pair: the engine reports its end-cell pass and every traceback band to the bar."""
    from gpualign_plugin.pairwise.cpu import align_cells, align_pair
    from gpualign_plugin.scoring import ScoringScheme

    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0")  # lines taken by hand, not by the clock
    scheme = ScoringScheme.dna()
    rng = __import__("numpy").random.default_rng(7)
    q = rng.integers(0, 4, 400).astype("uint8")
    t = q.copy()
    t[::25] = (t[::25] + 1) % 4
    budget = 400 * 401 // 8
    stream = io.StringIO()
    lines = []
    with Progress(align_cells(400, 400, budget), "pairwise", stream=stream) as progress:
        def advance(cells: int) -> None:
            progress.advance(cells)
            lines.append(progress.heartbeat_line())

        align_pair(q, t, scheme, "global", memory_budget=budget, progress=advance)
    done = [re.search(r"\((\S+) of", line).group(1) for line in lines]
    assert len(lines) >= 10 and "\r" not in stream.getvalue()
    assert all(re.match(r"^\d{4}-\d\d-\d\dT\S+Z gpualign: pairwise: \d+\.\d% \(", line) for line in lines)
    counts = [float(x[:-1]) * 1000 if x.endswith("k") else float(x) for x in done]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert progress.done == progress.total


@pytest.mark.gpu
def test_one_long_gpu_pair_moves_the_bar_of_the_cli(tmp_path, monkeypatch):
    """`gpualign pairwise --backend gpu` on ONE 400 kbp pair (local placement, both strands): the
    bar's count grows while each score kernel runs and through the traceback (lines taken at
    every report, not by the clock), and the PAF is the placement computed without progress."""
    import numpy as np

    from gpualign_plugin.cli.bench import related_pair
    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.paf import write_paf
    from gpualign_plugin.pairwise import gpu
    from gpualign_plugin.pairwise.api import place_local
    from gpualign_plugin.scoring import ScoringScheme

    monkeypatch.setattr(gpu, "POLL_SECONDS", 0.002)
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0")
    q, t = related_pair(400_000, 400_000, 0.02, 13)
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)
    for name, codes in (("q", q), ("t", t)):
        (tmp_path / f"{name}.fa").write_text(f">{name}\n{letters[codes].tobytes().decode()}\n")
    lines = []
    original = Progress.advance

    def advance(self, units: int = 1) -> None:
        original(self, units)
        lines.append(self.heartbeat_line())

    monkeypatch.setattr(Progress, "advance", advance)
    out = tmp_path / "out.paf"
    assert main(["pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "-o", str(out),
                 "--backend", "gpu"]) == 0
    percents = [float(re.search(r"pairwise: ([\d.]+)% \(", line).group(1)) for line in lines]
    assert percents == sorted(percents) and len({p for p in percents if 0 < p < 100}) >= 5, percents
    scheme = ScoringScheme.dna()
    expected = tmp_path / "expected.paf"
    query, target = (scheme.encode(name, letters[codes].tobytes().decode()) for name, codes in (("q", q), ("t", t)))
    write_paf(str(expected), place_local([query], [target], scheme, backend="gpu"), {"q": query}, {"t": target})
    assert out.read_bytes() == expected.read_bytes()


def test_an_estimated_total_that_the_work_passes_is_raised_and_the_time_left_follows_the_rate(monkeypatch):
    """A placement that finds several pieces re-scores and aligns each: more cells than its
    estimate. The bar then falls back below 100% (total raised to 1.25 x done), never rests full."""
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0")
    with Progress(1000, "compare", stream=io.StringIO(), estimated=True) as progress:
        progress.advance(600)
        assert (progress.total, progress.done) == (1000, 600)
        progress.advance(600)
        assert (progress.total, progress.done) == (1500, 1200)
        assert re.search(r": 80\.0% \(1\.20k of 1\.50k cells\)", progress.heartbeat_line())
    assert progress.done == progress.total == 1500
    with Progress(1000, "pairwise", stream=io.StringIO()) as capped:
        capped.advance(1600)
        assert (capped.total, capped.done) == (1000, 1000)


def test_a_stage_restarts_the_count_the_rate_and_the_label(monkeypatch):
    """`compare` runs stages of different cost per cell (score passes, then syntenic
    alignments): each later stage restarts the bar with its own total, rate and time left."""
    monkeypatch.setenv("GPUALIGN_HEARTBEAT_SECONDS", "0")
    with Progress(1000, "compare", stream=io.StringIO(), estimated=True) as progress:
        progress.advance(1500)
        progress.restart("compare, aligning regions", 40)
        assert (progress.total, progress.done) == (40, 0)
        progress.advance(10)
        assert re.search(r" gpualign: compare, aligning regions: 25\.0% \(10\.0 of 40\.0 cells\) in 00:00, ",
                         progress.heartbeat_line())
    assert progress.done == progress.total == 40
    terminal = Terminal()
    with Progress(1000, "compare", stream=terminal, estimated=True) as progress:
        progress.advance(1000)
        progress.restart("compare, repeat copies", 4 * 10**6)
        progress.advance(4 * 10**6)
    assert "compare, repeat copies" in terminal.getvalue() and "4.00M/4.00M" in terminal.getvalue()


def test_compare_in_a_log_writes_heartbeats(tmp_path):
    """`gpualign -v compare` with stderr to a file: timestamped heartbeat lines of its placement and
    alignments (it had no progress at all: an hour on the CPU for a bacterial genome, silent), and
    -v adds our detail, not the libraries' (matplotlib's font search filled 40 lines of the log)."""
    rng = __import__("numpy").random.default_rng(11)
    reference = "".join(rng.choice(list("ACGT"), size=6000))
    edited = list(reference)
    for position in rng.choice(6000, size=60, replace=False):
        edited[position] = "ACGT"[("ACGT".index(edited[position]) + 1) % 4]
    edited = "".join(edited)
    (tmp_path / "ref.fa").write_text(f">ref\n{reference}\n")
    (tmp_path / "asm.fa").write_text(f">c1\n{edited[:3500]}\n>c2\n{edited[3400:]}\n")
    env = dict(os.environ, GPUALIGN_HEARTBEAT_SECONDS="0.02",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", "-v", "compare", "-q", str(tmp_path / "asm.fa"),
                             "-t", str(tmp_path / "ref.fa"), "-p", str(tmp_path / "out"), "--backend", "cpu"],
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    beats = [line for line in result.stderr.splitlines() if " gpualign: compare: " in line]
    assert beats and all(re.match(r"^\d{4}-\d\d-\d\dT\S+Z gpualign: compare: \d+\.\d% \(\S+ of \S+ cells\) in ", b)
                         for b in beats), result.stderr
    assert "2 of 2 contigs placed" in result.stderr
    assert "findfont" not in result.stderr and "matplotlib" not in result.stderr, result.stderr
