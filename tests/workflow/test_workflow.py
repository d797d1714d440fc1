"""The Snakemake workflow: lint, dry run, the real demo run checked with real tools, robustness.

The demo run (config/config.yaml on resources/, CPU) happens once per session in a
temporary copy of the repository and every output test reads it. Smaller projects made
here (a 6 kb reference, a query genome in several oddly named records) check what needs
several runs: sharding does not change answers, a killed run restarts cleanly, bad
configs and missing inputs are named.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pysam
import pytest
from paths import REPO

COPIED = ("workflow", "config", "resources", "gpualign_plugin")
SNAKEMAKE = shutil.which("snakemake")

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")


def copy_project(destination, extra=()) -> str:
    """Copy what the workflow needs (and the folders ``extra``) into ``destination``; return it."""
    destination = str(destination)
    os.makedirs(destination, exist_ok=True)
    for name in COPIED + tuple(extra):
        shutil.copytree(os.path.join(REPO, name), os.path.join(destination, name),
                        ignore=shutil.ignore_patterns("__pycache__", "results", ".snakemake"))
    return destination


def environment() -> dict:
    """The environment the workflow runs in: the package importable from the checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def snakemake(project: str, *args, timeout: int = 900, check: bool = True):
    """Run snakemake in ``project``; return the CompletedProcess (output captured)."""
    result = subprocess.run([SNAKEMAKE, *args], cwd=project, env=environment(),
                            capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-5000:]}")
    return result


def random_dna(length: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return "".join(rng.choice(list("ACGT"), size=length))


def write_fasta(path, records) -> None:
    with open(path, "w") as handle:
        for name, text in records:
            handle.write(f">{name}\n")
            for start in range(0, len(text), 60):
                handle.write(text[start:start + 60] + "\n")


def lambda_window(start: int, end: int) -> str:
    """Bases ``start`` to ``end`` of the lambda phage genome of the demo data."""
    with open(os.path.join(REPO, "resources", "genomes", "lambda.fa")) as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">"))[start:end]


def small_config(project: str, analyses=("pairwise",), shards: int = 2,
                 query_names=("read/1{a}", "ctg:2 with description", "ctg|3", "ctg_4"),
                 reference: str | None = None, minus=()) -> str:
    """Write a small project's data and config into ``project``; return the config path.

    The reference is ``reference`` or a random 6 kb record; the query genome is a mutated
    copy of it cut into four records with names that would break wildcards if they were
    used as such. Records whose id is in ``minus`` are written reverse complemented, as
    an assembly gives about half its contigs.
    """
    from gpualign_plugin.compare.simulate import SimulationParameters, simulate_genome
    from gpualign_plugin.scoring import reverse_complement_text

    data = os.path.join(project, "data")
    os.makedirs(data, exist_ok=True)
    reference = reference or random_dna(6000, 42)
    write_fasta(os.path.join(data, "ref.fa"), [("chrT", reference)])
    params = SimulationParameters(inversion_length=0, deletion_length=200, insertion_length=150,
                                  transposition_length=0, substitution_rate=0.01,
                                  indel_rate=0.002)
    (strain,), _ = simulate_genome([("chrT", reference)], params, seed=7)
    cuts = np.linspace(0, len(strain[1]), len(query_names) + 1).astype(int)
    pieces = [(name, strain[1][cuts[i]:cuts[i + 1]]) for i, name in enumerate(query_names)]
    write_fasta(os.path.join(data, "query.fa"),
                [(name, reverse_complement_text(text) if name.split()[0] in minus else text)
                 for name, text in pieces])
    shutil.copy(os.path.join(REPO, "resources", "triplets", "globins.fa"), data)
    with open(os.path.join(data, "triplets.tsv"), "w") as handle:
        handle.write("HBA_HUMAN\tHBB_HUMAN\tMYG_PHYCA\nHBA_HORSE\tHBB_HORSE\tGLB5_PETMA\n")
    proteins = [line for line in open(os.path.join(REPO, "resources", "proteins", "queries.fa"))]
    with open(os.path.join(data, "queries.fa"), "w") as handle:
        # the first three query records
        records = "".join(proteins).split(">")[1:4]
        handle.write("".join(">" + record for record in records))
    switches = {name: name in analyses for name in ("pairwise", "syntenic", "search", "three_way")}
    config = f"""backend: cpu
threads: 1
genomes:
  - {{name: ref, fasta: data/ref.fa, role: reference}}
  - {{name: smallq, fasta: data/query.fa, role: query}}
analyses: {{pairwise: {str(switches['pairwise']).lower()}, syntenic: {str(switches['syntenic']).lower()}, search: {str(switches['search']).lower()}, three_way: {str(switches['three_way']).lower()}}}
pairwise: {{mode: semiglobal, strand: both, shards: {shards}}}
syntenic: {{pairing: best_hit}}
search:
  queries: data/queries.fa
  database: resources/proteins/database.fa
  shards: 2
  top: 3
three_way:
  explicit: {{sequences: data/globins.fa, triplets: data/triplets.tsv}}
  batches: 2
  scoring: {{matrix: BLOSUM62, gap_open: 11, gap_extend: 1}}
"""
    path = os.path.join(project, "config", "small.yaml")
    with open(path, "w") as handle:
        handle.write(config)
    return path


def paf_rows(path):
    with open(path) as handle:
        return [line.rstrip("\n").split("\t") for line in handle if line.strip()]


def bam_records(path):
    with pysam.AlignmentFile(path, "rb") as bam:
        return [(r.query_name, r.reference_name, r.reference_start, r.is_reverse, r.cigarstring,
                 r.mapping_quality, r.get_tag("AS")) for r in bam]


# ---------------------------------------------------------------------------------------
# The demo run, shared by the output tests.


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """The demo in a copy of the repository, run on the CPU, then its report."""
    project = copy_project(tmp_path_factory.mktemp("demo"))
    started = time.monotonic()
    snakemake(project, "--cores", "2", "--config", "backend=cpu", timeout=1500)
    elapsed = time.monotonic() - started
    snakemake(project, "--report", "results/report.html", "--config", "backend=cpu")
    print(f"\ndemo run: {elapsed:.0f} s on {os.cpu_count()} cores")
    return project


def test_lint_reports_nothing():
    result = snakemake(REPO, "--lint")
    assert "Lints for" not in result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr


def test_dry_run_plans_every_analysis(tmp_path):
    project = copy_project(tmp_path / "dry")
    result = snakemake(project, "-n", "--quiet", "rules")
    for rule in ("split_genome", "syntenic", "compare", "compare_table", "makedb", "search_shard", "merge_search",
                 "split_triplets", "report_throughput", "report_hits"):
        assert re.search(rf"^{rule}\s+\d+", result.stdout, re.M), (rule, result.stdout)
    assert not os.path.exists(os.path.join(project, "results"))


def test_gpu_slot_options_follow_the_program_in_every_command(tmp_path):
    # With several local GPUs every GPU job takes a slot: `gpualign --local-gpus N --gpu-lock-dir D
    # SUBCOMMAND ...`; the options before the program would be a command that cannot run.
    project = copy_project(tmp_path / "slots")
    result = snakemake(project, "-n", "-p", "--config", "backend=gpu", "local_gpus=2")
    commands = [line for line in result.stdout.splitlines()
                if "--local-gpus 2" in line and not line.lstrip().startswith("resources:")]
    assert any(" compare " in line for line in commands), result.stdout
    for line in commands:
        before = line.split("--local-gpus", 1)[0]
        assert "gpualign" in before, line


def test_changing_local_gpus_reruns_nothing(tmp_path):
    # local_gpus only decides which free GPU a job takes, not what it computes; before, the
    # slot options were a param, so going from 1 to 2 GPUs planned every alignment job again
    # ("params have changed since last execution: pairwise_shard").
    project = copy_project(tmp_path / "slots_rerun")
    config = small_config(project, shards=1)
    snakemake(project, "--cores", "2", "--configfile", config, "--config", "backend=auto")
    result = snakemake(project, "-n", "--configfile", config, "--config", "backend=auto",
                       "local_gpus=2")
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-2000:]


@pytest.mark.tools("samtools")
def test_demo_bams_are_sorted_indexed_and_readable(demo):
    for genome in ("strainA", "strainB"):
        bam = os.path.join(demo, "results", "pairwise", f"{genome}.bam")
        subprocess.run(["samtools", "quickcheck", bam], check=True)
        assert os.path.exists(bam + ".bai")
        flagstat = subprocess.run(["samtools", "flagstat", bam], capture_output=True, text=True,
                                  check=True).stdout
        assert re.search(r"^[1-9]\d* \+ 0 mapped", flagstat, re.M), flagstat
        idxstats = subprocess.run(["samtools", "idxstats", bam], capture_output=True, text=True,
                                  check=True).stdout
        assert idxstats.split("\t")[0] == "lambda"
        with pysam.AlignmentFile(bam, "rb") as handle:
            assert handle.header["HD"]["SO"] == "coordinate"
            records = list(handle)
        positions = [r.reference_start for r in records]
        assert positions == sorted(positions)
        primary = [r for r in records if not r.is_secondary and not r.is_supplementary]
        assert [r.query_name for r in primary] == [f"{genome}_lambda"]
        # Local placement: the pieces between the planted rearrangements, the inverted one on
        # the minus strand, together cover the strain but for its foreign insertion (1.5 kbp).
        pieces = [r for r in records if not r.is_secondary]
        assert len(pieces) >= 5 and all(r.has_tag("SA") for r in pieces)
        assert any(r.is_reverse for r in pieces) and not primary[0].is_reverse
        assert sum(r.query_alignment_length for r in pieces) > 45000


def test_demo_paf_matches_bam(demo):
    for genome in ("strainA", "strainB"):
        rows = paf_rows(os.path.join(demo, "results", "pairwise", f"{genome}.paf"))
        bam = bam_records(os.path.join(demo, "results", "pairwise", f"{genome}.bam"))
        assert sorted((r[0], r[5], int(r[7]), r[4] == "-") for r in rows) == \
            sorted((b[0], b[1], b[2], b[3]) for b in bam)


def planted(project, genome):
    from gpualign_plugin.compare.simulate import read_truth

    truth = read_truth(os.path.join(project, "resources", "genomes", f"{genome}.truth.tsv"))
    return {event.event: event for event in truth if event.event in
            ("inversion", "deletion", "insertion", "transposition")}


def read_differences(path):
    with open(path) as handle:
        header = handle.readline().lstrip("#").rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in handle]


def near(a: int, b: int, tolerance: int = 25) -> bool:
    return abs(int(a) - int(b)) <= tolerance


@pytest.mark.parametrize("genome", ["strainA", "strainB"])
@pytest.mark.tools("bcftools")
def test_demo_comparison_finds_every_planted_event(demo, genome):
    events = planted(demo, genome)
    results = os.path.join(demo, "results", "compare", genome)
    differences = read_differences(os.path.join(results, f"{genome}.differences.tsv"))

    def found(kind, **coordinates):
        return [d for d in differences if d["kind"] == kind and all(
            near(d[key], value) for key, value in coordinates.items())]

    assert len(differences) == 4, differences
    inversion = events["inversion"]
    assert found("inversion", target_start=inversion.ref_start, target_end=inversion.ref_end,
                 query_start=inversion.strain_start, query_end=inversion.strain_end)
    deletion = events["deletion"]
    assert found("deletion", target_start=deletion.ref_start, target_end=deletion.ref_end)
    insertion = events["insertion"]
    assert found("insertion", query_start=insertion.strain_start, query_end=insertion.strain_end)
    moved = events["transposition"]
    # The moved block is one relocation: its place in the strain, its origin on the reference.
    assert found("relocation", target_start=moved.ref_start, target_end=moved.ref_end,
                 query_start=moved.strain_start, query_end=moved.strain_end)
    with open(os.path.join(demo, "results", "syntenic", genome, f"{genome}.blocks.tsv")) as handle:
        rows = [line.split("\t") for line in handle if not line.startswith("#")]
    assert {row[3] for row in rows} == {"match", "difference"}
    report = open(os.path.join(results, f"{genome}.report")).read()
    for label in ("InversionEvents", "RelocationEvents", "InsertionEvents", "DeletionEvents"):
        assert re.search(rf"^{label}\s+1\s+1$", report, re.M), report
    snps = int(re.search(r"^TotalSNPs\s+(\d+)", report, re.M).group(1))
    planted_snps = sum(1 for line in open(os.path.join(
        demo, "resources", "genomes", f"{genome}.truth.tsv"))
        if "\tsubstitution\t" in line and "\t-1\t" not in line)
    # Every planted substitution with a reference position, inverted and moved blocks included.
    assert 0.98 * planted_snps <= snps <= 1.01 * planted_snps, (snps, planted_snps)
    subprocess.run(["bcftools", "view", "-H", os.path.join(results, f"{genome}.vcf")],
                   check=True, capture_output=True)
    for name in (f"{genome}.bam", f"{genome}.dotplot.png", f"{genome}.differences.html"):
        assert os.path.getsize(os.path.join(results, name)) > 0
    for name in (f"{genome}.query.bed", f"{genome}.target.bed", f"{genome}.paf",
                 f"{genome}.dotplot.png"):
        assert os.path.getsize(os.path.join(demo, "results", "syntenic", genome, name)) > 0


def test_demo_search_table_is_blast_tabular(demo):
    with open(os.path.join(demo, "results", "search", "hits.tsv")) as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if not line.startswith("#")]
    queries = [line[1:].split()[0] for line in open(
        os.path.join(demo, "resources", "proteins", "queries.fa")) if line.startswith(">")]
    database = {line[1:].split()[0] for line in open(
        os.path.join(demo, "resources", "proteins", "database.fa")) if line.startswith(">")}
    assert rows and all(len(row) == 12 for row in rows)
    per_query = {}
    for row in rows:
        assert row[0] in queries and row[1] in database
        assert 0 < float(row[2]) <= 100 and int(row[3]) > 0
        per_query.setdefault(row[0], []).append(float(row[11]))
    assert set(per_query) == set(queries)
    for bits in per_query.values():
        assert len(bits) <= 5 and bits == sorted(bits, reverse=True)
    with pysam.AlignmentFile(os.path.join(demo, "results", "search", "hits.sam"), "r") as sam:
        assert sum(1 for _ in sam) >= len(rows)


def test_demo_maf_has_every_triplet_and_aligned_fasta(demo):
    with open(os.path.join(demo, "results", "three_way", "all.maf")) as handle:
        text = handle.read()
    assert text.startswith("##maf")
    blocks = [block for block in text.split("\n\n") if block.strip().startswith("a")]
    triplets = [line.split() for line in open(
        os.path.join(demo, "resources", "triplets", "globins.triplets.tsv")) if line.strip()]
    assert len(blocks) == len(triplets)
    for block, triplet in zip(blocks, triplets):
        rows = [line.split() for line in block.splitlines() if line.startswith("s ")]
        assert [row[1].split(".")[-1] for row in rows] == triplet
        assert len({len(row[6]) for row in rows}) == 1
        for row in rows:
            assert len(row[6].replace("-", "")) == int(row[3])
    fasta_dir = os.path.join(demo, "results", "three_way", "fasta")
    files = sorted(name for name in os.listdir(fasta_dir) if not name.startswith("."))
    assert files == sorted("_".join(triplet) + ".fasta" for triplet in triplets)
    for name in files:
        rows = open(os.path.join(fasta_dir, name)).read().split(">")[1:]
        sequences = ["".join(row.splitlines()[1:]) for row in rows]
        assert len(sequences) == 3 and len({len(s) for s in sequences}) == 1


def test_demo_report_holds_tables_and_figures(demo):
    report = os.path.join(demo, "results", "report.html")
    assert os.path.getsize(report) > 10000
    text = open(report, encoding="utf-8", errors="replace").read()
    for name in ("strainA.dotplot.png", "strainB.dotplot.png", "identity.png",
                 "throughput.html", "strainA.differences.html",
                 "top_hits.html", "strainA.report"):
        assert name in text, name
    with open(os.path.join(demo, "results", "report", "throughput.tsv")) as handle:
        header = handle.readline().rstrip("\n").split("\t")
        rows = [dict(zip(header, line.rstrip("\n").split("\t"))) for line in handle]
    commands = {row["command"] for row in rows}
    assert {"pairwise", "syntenic", "search", "align3"} <= commands
    for row in rows:
        assert int(row["cells"]) > 0 and float(row["seconds"]) > 0 and float(row["gcups"]) > 0


def test_demo_writes_only_results_logs_benchmarks(demo):
    made = {name for name in os.listdir(demo) if name not in COPIED}
    assert made <= {"results", "logs", "benchmarks", ".snakemake"}, made
    assert os.listdir(os.path.join(demo, "logs")) and os.listdir(os.path.join(demo, "benchmarks"))


# ---------------------------------------------------------------------------------------
# Smaller projects: sharding, restart, bad configs.


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory):
    """The small pairwise project run with 1 shard and with 3 shards."""
    runs = {}
    for shards in (1, 3):
        project = copy_project(tmp_path_factory.mktemp(f"small{shards}"))
        config = small_config(project, shards=shards)
        snakemake(project, "--cores", "2", "--configfile", config)
        runs[shards] = project
    return runs


def test_sharding_does_not_change_the_answer(small_runs):
    one, three = (os.path.join(small_runs[n], "results", "pairwise") for n in (1, 3))
    parts = os.listdir(os.path.join(small_runs[3], "results", "split", "smallq"))
    assert sorted(name for name in parts if not name.startswith(".")) == ["000.fa", "001.fa", "002.fa"]
    assert bam_records(os.path.join(one, "smallq.bam")) == bam_records(os.path.join(three, "smallq.bam"))
    assert open(os.path.join(one, "smallq.paf")).read() == open(os.path.join(three, "smallq.paf")).read()


def test_record_names_that_would_break_wildcards_are_kept(small_runs):
    names = {record[0] for record in bam_records(
        os.path.join(small_runs[3], "results", "pairwise", "smallq.bam"))}
    assert names == {"read/1{a}", "ctg:2", "ctg|3", "ctg_4"}


def test_every_rule_log_says_what_the_job_did(small_runs):
    # Before, the logs of split_genome, merge_pairwise and the report rules were empty.
    logs = os.path.join(small_runs[3], "logs")
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(logs) for name in names]
    assert any("split" in path for path in paths) and any("report" in path for path in paths)
    empty = [os.path.relpath(path, logs) for path in paths if os.path.getsize(path) == 0]
    assert not empty, empty


def test_syntenic_pairs_records_by_best_pairwise_hit_on_its_strand(tmp_path):
    # A 6 kb window of lambda phage is the reference; 'ctg|3' is given reverse complemented,
    # so its best hit is on the minus strand. Before, best_hit paired it on the plus strand
    # and the syntenic alignment was one difference block.
    from gpualign_plugin.cli.main import main
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.scoring import ScoringScheme, reverse_complement_text

    project = copy_project(tmp_path / "pairing")
    config = small_config(project, analyses=("syntenic",), shards=2,
                          reference=lambda_window(20000, 26000), minus=("ctg|3",))
    snakemake(project, "--cores", "2", "--configfile", config)
    results = os.path.join(project, "results", "syntenic", "smallq")
    pairs = [line.rstrip("\n").split("\t") for line in open(os.path.join(results, "smallq.pairs.txt"))]
    assert pairs == [[name, "chrT", "-" if name == "ctg|3" else "+"]
                     for name in ("read/1{a}", "ctg:2", "ctg|3", "ctg_4")]
    with open(os.path.join(results, "smallq.blocks.tsv")) as handle:
        lines = handle.read().splitlines()
    columns = [line for line in lines if line.startswith("#")][-1][1:].split("\t")
    rows = [dict(zip(columns, line.split("\t"))) for line in lines if not line.startswith("#")]
    assert {(r["query_id"], r["target_id"]) for r in rows} == {(name, "chrT") for name, *_ in pairs}
    assert {r["query_id"]: r["strand"] for r in rows} == {name: strand for name, _, strand in pairs}
    # ctg|3 aligned on the minus strand is its reverse complement aligned on the plus strand,
    # reported on its forward strand: mostly matched, at high identity.
    contig = {record.id: record.text for record in read_fasta(
        os.path.join(project, "data", "query.fa"), ScoringScheme.dna())}["ctg|3"]
    rc_path = tmp_path / "rc.fa"
    rc_path.write_text(f">ctg|3\n{reverse_complement_text(contig)}\n")
    explicit = str(tmp_path / "explicit")
    assert main(["syntenic", "-q", str(rc_path), "-t", os.path.join(project, "data", "ref.fa"),
                 "-o", explicit]) == 0
    with open(f"{explicit}.blocks.tsv") as handle:
        expected = [dict(zip(columns, line.rstrip("\n").split("\t"))) for line in handle
                    if not line.startswith("#")]
    m = len(contig)
    minus_rows = [r for r in rows if r["query_id"] == "ctg|3"]
    assert [{**r, "query_start": str(m - int(r["query_end"])),
             "query_end": str(m - int(r["query_start"])), "strand": "+"} for r in minus_rows] == expected
    matched = [r for r in minus_rows if r["type"] == "match"]
    assert sum(int(r["query_len"]) for r in matched) >= 0.9 * m
    assert all(float(r["identity_pct"]) >= 95 for r in matched)
    with open(os.path.join(results, "smallq.paf")) as handle:
        strands = {line.split("\t")[0]: line.split("\t")[4] for line in handle}
    assert strands == {name: strand for name, _, strand in pairs}
    compared = os.path.join(project, "results", "compare", "smallq")
    summary = open(os.path.join(compared, "smallq.report")).read()
    assert re.search(r"^AlignedSeqs\s+1\(100.00%\)\s+4\(100.00%\)", summary, re.M), summary
    assert os.path.getsize(os.path.join(compared, "smallq.dotplot.png")) > 0


def test_killed_run_restarts_to_the_same_outputs(small_runs, tmp_path):
    project = copy_project(tmp_path / "killed")
    config = small_config(project, shards=3)
    process = subprocess.Popen([SNAKEMAKE, "--cores", "1", "--configfile", config], cwd=project,
                               env=environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    stats = os.path.join(project, "results", "stats", "pairwise")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if os.path.isdir(stats) and os.listdir(stats):
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not os.path.exists(os.path.join(project, "results", "pairwise", "smallq.bam"))
    snakemake(project, "--unlock", "--configfile", config)
    snakemake(project, "--cores", "2", "--configfile", config)
    reference = os.path.join(small_runs[3], "results", "pairwise")
    result = os.path.join(project, "results", "pairwise")
    assert bam_records(os.path.join(result, "smallq.bam")) == \
        bam_records(os.path.join(reference, "smallq.bam"))
    assert open(os.path.join(result, "smallq.paf")).read() == \
        open(os.path.join(reference, "smallq.paf")).read()


@pytest.mark.parametrize("override,expected", [
    ("backend=tpu", r"backend"),
    ("shard_count=3", r"shard_count"),
])
def test_bad_config_names_the_key(tmp_path, override, expected):
    project = copy_project(tmp_path / "bad")
    result = snakemake(project, "-n", "--config", override, check=False)
    assert result.returncode != 0
    assert re.search(expected, result.stdout + result.stderr)


def test_bad_genome_name_is_rejected_naming_the_key(tmp_path):
    project = copy_project(tmp_path / "badname")
    path = os.path.join(project, "config", "config.yaml")
    text = open(path).read().replace("name: strainA", "name: strain/A")
    open(path, "w").write(text)
    result = snakemake(project, "-n", check=False)
    assert result.returncode != 0
    assert "strain/A" in result.stdout + result.stderr
    assert "name" in result.stdout + result.stderr


def test_missing_input_names_the_file(tmp_path):
    project = copy_project(tmp_path / "missing")
    os.remove(os.path.join(project, "resources", "genomes", "strainB.fa"))
    result = snakemake(project, "-n", check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "resources/genomes/strainB.fa" in output and "genomes[2].fasta" in output


def test_bam_index_kind_of_a_gzipped_reference_is_read_once_or_from_its_fai(tmp_path):
    """Snakemake parses the Snakefile for every job: a compressed reference's record lengths
    (.bai or .csi) come from its samtools .fai, else from a cache written at the first parse
    (before, the whole file was decompressed and parsed at every parse)."""
    import gzip

    project = copy_project(tmp_path / "gz")
    config = small_config(project)
    data = os.path.join(project, "data")
    with open(os.path.join(data, "ref.fa"), "rb") as plain:
        with gzip.open(os.path.join(data, "ref.fa.gz"), "wb") as packed:
            packed.write(plain.read())
    text = open(config).read().replace("data/ref.fa", "data/ref.fa.gz")
    open(config, "w").write(text)

    def planned_index() -> str:
        out = snakemake(project, "-n", "--configfile", config).stdout
        found = set(re.findall(r"\.bam\.(bai|csi)\b", out))
        assert len(found) == 1, (found, out)
        return found.pop()

    assert planned_index() == "bai"
    cached = os.listdir(os.path.join(project, ".snakemake", "gpualign"))
    cache = os.path.join(project, ".snakemake", "gpualign", cached[0])
    assert len(cached) == 1 and open(cache).read() == "6000\n"
    # The cache is what later parses read: a length past the BAI limit written there shows.
    with open(cache, "w") as handle:
        handle.write("600000000\n")
    assert planned_index() == "csi"
    # A samtools index not older than the file wins.
    with open(os.path.join(data, "ref.fa.gz.fai"), "w") as handle:
        handle.write("chrT\t6000\t6\t60\t61\n")
    assert planned_index() == "bai"


def test_braces_in_an_input_path_are_rejected_naming_the_key(tmp_path):
    # Snakemake reads braces in a path as a wildcard; before, the run stopped with
    # "WildcardError in rule split_genome ... Wildcards in input files cannot be determined
    # from output files: 'v2'", naming neither the key nor the file.
    project = copy_project(tmp_path / "braces")
    genomes = os.path.join(project, "resources", "genomes")
    os.rename(os.path.join(genomes, "strainB.fa"), os.path.join(genomes, "strainB{v2}.fa"))
    path = os.path.join(project, "config", "config.yaml")
    text = open(path).read().replace("resources/genomes/strainB.fa", '"resources/genomes/strainB{v2}.fa"')
    open(path, "w").write(text)
    result = snakemake(project, "-n", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "WildcardError" not in output
    assert "config key 'genomes[2].fasta'" in output and "strainB{v2}.fa" in output


def test_best_hit_triplets_are_aligned(tmp_path):
    project = copy_project(tmp_path / "best_hits")
    with open(os.path.join(project, "config", "config.yaml"), "w") as handle:
        handle.write("""backend: cpu
threads: 1
genomes:
  - {name: lambda, fasta: resources/genomes/lambda.fa, role: reference}
analyses: {pairwise: false, syntenic: false, search: false, three_way: true}
three_way:
  best_hits:
    queries: resources/triplets/queries.fa
    sets: [resources/triplets/setB.fa, resources/triplets/setC.fa]
  batches: 2
  scoring: {matrix: BLOSUM62, gap_open: 11, gap_extend: 1}
""")
    snakemake(project, "--cores", "2")
    results = os.path.join(project, "results", "three_way")
    firsts = []
    for number in (1, 2):
        best = {}
        for line in open(os.path.join(results, "best_hits", f"set{number}.tsv")):
            fields = line.split("\t")
            best.setdefault(fields[0], fields[1])
        firsts.append(best)
    triplets = [line.rstrip("\n").split("\t") for line in open(os.path.join(results, "triplets.tsv"))]
    queries = [line[1:].split()[0] for line in open(
        os.path.join(project, "resources", "triplets", "queries.fa")) if line.startswith(">")]
    assert [t[0] for t in triplets] == [f"query.{q}" for q in queries if q in firsts[0] and q in firsts[1]]
    for query, first, second in triplets:
        name = query[len("query."):]
        assert first == f"set1.{firsts[0][name]}" and second == f"set2.{firsts[1][name]}"
    maf = open(os.path.join(results, "all.maf")).read()
    assert maf.count("\na score=") == len(triplets)


# ---------------------------------------------------------------------------------------
# The workflow's own subcommands.


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", *args], cwd=REPO,
                          capture_output=True, text=True)


def test_split_keeps_order_and_balances_by_length(tmp_path):
    from gpualign_plugin.cli.split import partition_contiguous

    assert partition_contiguous([10, 10, 10, 10], 2) == [(0, 2), (2, 4)]
    assert partition_contiguous([100, 1, 1, 1], 3) == [(0, 1), (1, 2), (2, 4)]
    assert partition_contiguous([5], 4) == [(0, 1)]
    records = [(f"r{i}", random_dna(100 * (i + 1), i)) for i in range(7)]
    write_fasta(tmp_path / "in.fa", records)
    result = run_cli("split", "--fasta", str(tmp_path / "in.fa"), "--parts", "3",
                     "--out-dir", str(tmp_path / "parts"))
    assert result.returncode == 0, result.stderr
    parts = sorted(os.listdir(tmp_path / "parts"))
    assert parts == ["000.fa", "001.fa", "002.fa"]
    joined = "".join(open(tmp_path / "parts" / name).read() for name in parts)
    assert joined == open(tmp_path / "in.fa").read()
    # The same directory split again into fewer parts holds only the new parts (and what
    # split did not write: a file of another name stays).
    (tmp_path / "parts" / "notes.txt").write_text("mine\n")
    result = run_cli("split", "--fasta", str(tmp_path / "in.fa"), "--parts", "2",
                     "--out-dir", str(tmp_path / "parts"))
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "parts")) == ["000.fa", "001.fa", "notes.txt"]


def test_merge_alignments_refuses_mismatched_options(tmp_path):
    result = run_cli("merge-alignments", "--paf", str(tmp_path / "a.paf"))
    assert result.returncode == 2
    assert "--paf and --out-paf go together" in result.stderr
    result = run_cli("merge-alignments", "--paf", str(tmp_path / "missing.paf"),
                     "--out-paf", str(tmp_path / "out.paf"))
    assert result.returncode == 2 and "missing.paf: no such file" in result.stderr
    assert not (tmp_path / "out.paf").exists()
