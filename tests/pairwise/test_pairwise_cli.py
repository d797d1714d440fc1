"""``gpualign pairwise`` end to end: outputs, primary/secondary, backends and every kind of bad input."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pysam
import pytest

from gpualign_plugin.cli.main import main
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.io.paf import read_paf
from gpualign_plugin.model import Cigar, score_cigar
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_text
from paths import DATA

RNG = np.random.default_rng(7)


def random_dna(length: int) -> str:
    return "".join(RNG.choice(list("ACGT"), length))


@pytest.fixture
def genomes(tmp_path):
    """A 3 kbp two-record reference and two contigs: one from chr1 (+), one reverse-complemented from chr2."""
    chr1, chr2 = random_dna(1800), random_dna(1200)
    contig1 = chr1[200:700]
    contig2 = reverse_complement_text(chr2[300:650].lower())  # soft-masked, minus strand
    target = tmp_path / "ref.fa"
    target.write_text(f">chr1\n{chr1}\n>chr2\n{chr2}\n")
    query = tmp_path / "contigs.fa"
    query.write_text(f">contig1\n{contig1}\n>contig2\n{contig2}\n")
    return str(query), str(target)


def run_cli(*args):
    return main(["pairwise", *map(str, args)])


@pytest.mark.tools("samtools")
def test_semiglobal_placement_writes_valid_sorted_indexed_bam_and_paf(genomes, tmp_path):
    query, target = genomes
    bam, paf = tmp_path / "out.bam", tmp_path / "out.paf"
    assert run_cli("-q", query, "-t", target, "--mode", "semiglobal", "--out", bam, "--out", paf,
                   "--backend", "cpu") == 0
    assert subprocess.run(["samtools", "quickcheck", str(bam)]).returncode == 0
    assert os.path.exists(str(bam) + ".bai")
    with pysam.AlignmentFile(str(bam)) as handle:
        assert handle.header["HD"]["SO"] == "coordinate"
        assert [sq["SN"] for sq in handle.header["SQ"]] == ["chr1", "chr2"]
        assert "gpualign" in handle.header["PG"][0]["CL"]
        primaries = {r.query_name: r for r in handle if not r.is_secondary}
    assert primaries["contig1"].reference_name == "chr1" and primaries["contig1"].reference_start == 200
    assert not primaries["contig1"].is_reverse and primaries["contig1"].get_tag("NM") == 0
    assert primaries["contig2"].reference_name == "chr2" and primaries["contig2"].reference_start == 300
    assert primaries["contig2"].is_reverse and primaries["contig2"].mapping_quality == 60
    rows = {(r["qname"], r["strand"]): r for r in read_paf(str(paf)) if r["tp"] == "P"}
    assert rows[("contig2", "-")]["tstart"] == 300 and rows[("contig2", "-")]["tend"] == 650


def test_pg_command_line_splits_back_into_the_arguments(genomes, tmp_path):
    # A path with a space (allowed in the workflow config): before, @PG CL held
    # '--target .../my ref.fa' unquoted, which a shell reads as two arguments.
    query, target = genomes
    spaced = tmp_path / "my ref.fa"
    shutil.copy(target, spaced)
    args = ["-q", query, "-t", str(spaced), "--out", str(tmp_path / "o.bam"), "--backend", "cpu"]
    assert run_cli(*args) == 0
    with pysam.AlignmentFile(str(tmp_path / "o.bam")) as handle:
        command = handle.header["PG"][0]["CL"]
    assert shlex.split(command) == ["gpualign", "pairwise", *args]


def test_every_reported_alignment_rescores_to_its_score(genomes, tmp_path):
    query, target = genomes
    paf = tmp_path / "out.paf"
    assert run_cli("-q", query, "-t", target, "--out", paf, "--backend", "cpu", "--min-score", "20") == 0
    scheme = ScoringScheme.dna()
    queries = {s.id: s for s in read_fasta(query, scheme)}
    targets = {s.id: s for s in read_fasta(target, scheme)}
    rows = read_paf(str(paf))
    assert rows
    from gpualign_plugin.scoring import reverse_complement_codes

    for row in rows:
        q = queries[row["qname"]].codes[row["qstart"]:row["qend"]]
        if row["strand"] == "-":
            q = reverse_complement_codes(q)
        t = targets[row["tname"]].codes[row["tstart"]:row["tend"]]
        assert score_cigar(Cigar.from_string(row["cg"]), q, t, scheme) == row["AS"]
        assert row["AS"] >= 20


def test_text_and_sam_outputs_and_pairs_file(genomes, tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="gpualign")
    query, target = genomes
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("# only contig1 on chr1\ncontig1 chr1\n")
    sam, txt = tmp_path / "out.sam", tmp_path / "out.txt"
    assert run_cli("-q", query, "-t", target, "--pairs", pairs, "--strand", "plus", "--out", sam,
                   "--out", txt, "--backend", "cpu") == 0
    assert "1 alignment of 1 query " in caplog.text  # the queries --pairs names
    with pysam.AlignmentFile(str(sam)) as handle:
        records = list(handle)
    assert [(r.query_name, r.reference_name) for r in records] == [("contig1", "chr1")]
    assert "contig1" in txt.read_text() and "Score" in txt.read_text()


def test_protein_local_alignment_with_a_named_matrix(tmp_path, data_dir):
    globins = os.path.join(DATA, "globins.fasta")
    out = tmp_path / "g.paf"
    assert run_cli("-q", globins, "-t", globins, "--matrix", "BLOSUM62", "--strand", "plus",
                   "--out", out, "--backend", "cpu") == 0
    rows = read_paf(str(out))
    self_hits = [r for r in rows if r["qname"] == r["tname"]]
    assert self_hits and all(r["tp"] == "P" and r["nmatch"] == r["qlen"] for r in self_hits)


def test_gpu_backend_without_a_gpu_exits_2_with_one_line(genomes, tmp_path, capsys):
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    query, target = genomes
    out = tmp_path / "x.bam"
    assert run_cli("-q", query, "-t", target, "--out", out, "--backend", "gpu") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--backend gpu" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("value", ["0,x", "0,0", "-1", ""])
def test_devices_option_rejects_what_is_not_a_list_of_distinct_devices(genomes, tmp_path, capsys, value):
    query, target = genomes
    with pytest.raises(SystemExit) as stop:
        main(["pairwise", "-q", query, "-t", target, "--out", str(tmp_path / "x.paf"), "--devices", value])
    assert stop.value.code == 2 and "--devices" in capsys.readouterr().err


def test_devices_on_the_cpu_backend_change_nothing(genomes, tmp_path):
    query, target = genomes
    for name, extra in (("one", []), ("two", ["--devices", "0,1"])):
        assert run_cli("-q", query, "-t", target, "--mode", "semiglobal", "--out", tmp_path / f"{name}.paf",
                       "--backend", "cpu", *extra) == 0
    assert (tmp_path / "one.paf").read_text() == (tmp_path / "two.paf").read_text()


@pytest.mark.gpu
def test_devices_split_a_chromosome_pair_over_two_gpus_with_the_same_output(tmp_path):
    """``--devices 0,1`` on one query and one target (a LongPairSession) and in global mode: the
    same PAF as one GPU, the matrix split in two, both devices named in the statistics."""
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    rng = np.random.default_rng(5)
    reference = "".join(rng.choice(list("ACGT"), 60_000))
    strain = reference[:25_000] + reverse_complement_text(reference[25_000:40_000]) + reference[40_000:]
    (tmp_path / "r.fa").write_text(f">ref\n{reference}\n")
    (tmp_path / "s.fa").write_text(f">strain\n{strain}\n")
    for mode in ("local", "global"):
        outputs = []
        for name, extra in (("one", []), ("two", ["--devices", "0,1"])):
            out, stats = tmp_path / f"{mode}_{name}.paf", tmp_path / f"{mode}_{name}.json"
            assert run_cli("-q", tmp_path / "s.fa", "-t", tmp_path / "r.fa", "--mode", mode, "--backend", "gpu",
                           "--out", out, "--stats", stats, *extra) == 0
            outputs.append(out.read_text())
            recorded = json.loads(stats.read_text())
        assert outputs[0] == outputs[1] and outputs[0]
        assert recorded["extra"]["gpu_phases"]["slabs"] == 2 and " + " in recorded["device"]


def test_auto_backend_falls_back_to_the_cpu_and_says_so(genomes, tmp_path, caplog):
    from gpualign_plugin.runtime.gpu import probe

    if probe(0).usable:
        pytest.skip("a GPU is present")
    query, target = genomes
    caplog.set_level("INFO", logger="gpualign")
    assert run_cli("-q", query, "-t", target, "--out", tmp_path / "x.paf", "--backend", "auto") == 0
    assert any("running on the CPU" in r.message for r in caplog.records)


@pytest.mark.parametrize("content, words", [
    (None, ["no such file"]),
    (b"\x1f\x8b\x08\x00binary\xff\xfe\n", ["not a UTF-8 text file"]),
    (b"contig1 chr1 extra\n", ["line 1", "expected two ids"]),
    (b"contig1 nowhere\n", ["line 1", "target id 'nowhere'"]),
], ids=["missing", "binary", "three_words", "unknown_target"])
def test_bad_pairs_file_gives_one_line_exit_2(genomes, tmp_path, capsys, content, words):
    query, target = genomes
    pairs = tmp_path / "pairs.txt"
    if content is not None:
        pairs.write_bytes(content)
    status = main(["pairwise", "-q", str(query), "-t", str(target), "--pairs", str(pairs),
                   "--out", str(tmp_path / "x.paf"), "--backend", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and str(pairs) in err[0]
    for word in words:
        assert word in err[0]
    assert not (tmp_path / "x.paf").exists()


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
def test_a_pair_listed_twice_is_aligned_once(genomes, tmp_path, mode):
    """A repeated --pairs line (pair lists concatenated from several sources) gave a second,
    identical alignment: a secondary record with --secondary and MAPQ 0 on the primary, as
    if the query had two equal placements."""
    import pysam

    query, target = genomes
    once, twice = tmp_path / "once.txt", tmp_path / "twice.txt"
    once.write_text("contig1 chr1\ncontig2 chr2\n")
    twice.write_text("contig1 chr1\ncontig2 chr2\ncontig1\tchr1\n")
    records = {}
    for pairs in (once, twice):
        out = tmp_path / f"{pairs.stem}.sam"
        assert run_cli("-q", query, "-t", target, "--pairs", pairs, "--mode", mode, "--secondary",
                       "--out", out, "--backend", "cpu") == 0
        with pysam.AlignmentFile(str(out)) as handle:
            records[pairs.stem] = [(r.query_name, r.flag, r.mapping_quality, r.cigarstring)
                                   for r in handle]
    assert records["twice"] == records["once"]
    # One alignment per listed pair and strand (global and semiglobal align both strands).
    strands = 1 if mode == "local" else 2
    assert sorted(name for name, flag, _, _ in records["once"] if not flag & 2048) == \
        ["contig1"] * strands + ["contig2"] * strands


def test_stats_file_records_engine_cells_and_gcups(genomes, tmp_path):
    import json

    query, target = genomes
    stats = tmp_path / "stats.json"
    assert run_cli("-q", query, "-t", target, "--out", tmp_path / "x.paf", "--backend", "cpu",
                   "--mode", "semiglobal", "--stats", stats) == 0
    data = json.loads(stats.read_text())
    assert data["engine"] == "cpu" and data["cells"] == (500 + 350) * 3000 * 2 and data["gcups"] > 0
    phases = data["extra"]["phases"]
    assert set(phases) == {"read_s", "align_s", "write_s", "total_s", "process_start_to_run_s"}
    assert all(v >= 0 for v in phases.values())
    assert phases["read_s"] + phases["align_s"] + phases["write_s"] <= phases["total_s"] + 1e-6
    assert phases["align_s"] <= data["seconds"]
    # Local placement also scores the second-best placement of every piece: more cells.
    assert run_cli("-q", query, "-t", target, "--out", tmp_path / "x.paf", "--backend", "cpu",
                   "--stats", stats) == 0
    data = json.loads(stats.read_text())
    assert data["cells"] > (500 + 350) * 3000 * 2 and data["gcups"] > 0


def test_gpu_memory_option_rejects_a_size_it_cannot_read(genomes, tmp_path, capsys):
    query, target = genomes
    with pytest.raises(SystemExit) as exit_info:
        run_cli("-q", query, "-t", target, "--out", tmp_path / "x.paf", "--gpu-memory", "lots")
    assert exit_info.value.code == 2
    assert "'lots' is not a memory size" in capsys.readouterr().err
    assert not (tmp_path / "x.paf").exists()


BAD_INPUTS = [
    # (name, query text or None for missing, extra args, words expected in the one-line error)
    ("missing", None, [], ["no such file"]),
    ("empty", "", [], ["file is empty"]),
    ("blank", "\n\n", [], ["file is empty"]),
    ("not_fasta", "hello world\n", [], ["not a FASTA file", "line 1"]),
    ("no_records", ";only a comment\n", [], ["no FASTA records"]),
    ("empty_sequence", ">a\nACGT\n>b\n", [], ["record 'b'", "empty sequence"]),
    ("bad_character", ">a\nACGT\n>b\nACG!T\n", [], ["record 'b'", "position 4", "'!'"]),
    ("protein_for_dna", ">p\nMKVLHEEQRSTW\n", [], ["record 'p'", "position 4", "protein"]),
    ("dna_for_protein", ">d\nACGTACGTACGTACGTAAC\n", ["--matrix", "BLOSUM62", "--strand", "plus"],
     ["record 'd'", "nucleotides"]),
    ("duplicate", ">a\nACGT\n>a\nACGT\n", [], ["record 'a'", "duplicate"]),
    # SAM's QNAME holds at most 254 characters: before, a traceback once every pair was aligned.
    ("name_too_long_for_sam", ">" + "r" * 255 + "\nACGT\n", [], ["255 characters", "at most 254"]),
    # A QNAME of '*' is SAM's 'no name': samtools and IGV would lose the contig's identity.
    ("star_name_for_sam", ">*\nACGTACGTAAACC\n", [], ["record '*'", "'no name'"]),
    # SAM's QNAME is printable ASCII without '@': before, a query '@r1' (a FASTQ name kept in a
    # FASTA header) made a SAM file whose record samtools read as a bad header line.
    ("at_name_for_sam", ">@r1\nACGTACGTAAACC\n", [], ["record '@r1'", "QNAME"]),
    ("non_ascii_name_for_sam", ">r\u00e9\nACGTACGTAAACC\n", [], ["record 'r\u00e9'", "QNAME"]),
    ("bad_gap_open", ">a\nACGT\n", ["--gap-open", "-2"], ["--gap-open"]),
    ("bad_gap_extend", ">a\nACGT\n", ["--gap-extend", "0"], ["--gap-extend"]),
    ("bad_extension", ">a\nACGT\n", ["--out", "{tmp}/x.xyz"], ["output format"]),
    ("unwritable", ">a\nACGT\n", ["--out", "{tmp}/q.fa/dir/x.bam"], ["cannot create the output directory"]),
    ("unwritable_stats", ">a\nACGT\n", ["--stats", "{tmp}/q.fa/dir/s.json"],
     ["s.json", "cannot create the output directory"]),
    ("protein_both_strands", ">p\nMKVLHEEQRSTW\n", ["--matrix", "BLOSUM62", "--strand", "both"], ["--strand both"]),
    ("evalue_zero", ">a\nACGT\n", ["--evalue", "0"], ["--evalue", "'0'"]),
    ("evalue_negative", ">a\nACGT\n", ["--evalue=-1e-5"], ["--evalue", "'-1e-5'"]),
    ("evalue_text", ">a\nACGT\n", ["--evalue", "small"], ["--evalue", "'small'"]),
    ("evalue_nan", ">a\nACGT\n", ["--evalue", "nan"], ["--evalue"]),
    # 600 + 20 residues at a match score of 10^6 could reach 2^29, past the 32-bit range.
    ("too_long_local", ">a\n" + "ACGT" * 150 + "\n", ["--match", "1000000", "--mismatch", "-1000000"],
     ["query 'a' (600 residues)", "target 't' (20 residues)", "overflow 32-bit scores"]),
    ("too_long_global", ">a\n" + "ACGT" * 150 + "\n",
     ["--match", "1000000", "--mismatch", "-1000000", "--mode", "global"],
     ["query 'a' (600 residues)", "target 't' (20 residues)", "overflow 32-bit scores"]),
]


@pytest.mark.parametrize("name, text, extra, words", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gives_one_line_exit_2_and_no_output(tmp_path, capsys, name, text, extra, words):
    target = tmp_path / "t.fa"
    protein = "--matrix" in extra
    target.write_text(">t\nMKVLHEEQRSTWACDEFG\n" if protein else ">t\nACGTACGTAAACCCGGGTTT\n")
    query = tmp_path / "q.fa"
    if text is not None:
        query.write_text(text)
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    # The output goes to a directory that does not exist yet: bad input must not leave it behind.
    out = [] if "--out" in extra else ["--out", str(tmp_path / "new" / "out.bam")]
    status = main(["pairwise", "-q", str(query), "-t", str(target), *out, *extra, "--backend", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith("gpualign: error:")
    for word in words:
        assert word in err[0]
    if text is not None and name not in ("bad_gap_open", "bad_gap_extend", "bad_extension", "unwritable",
                                         "unwritable_stats", "protein_both_strands") \
            and not name.startswith(("evalue", "too_long")):
        assert str(query) in err[0]
    assert sorted(os.listdir(tmp_path)) == sorted(["q.fa", "t.fa"] if text is not None else ["t.fa"])


def test_a_failure_while_writing_leaves_no_output(genomes, tmp_path, monkeypatch):
    import gpualign_plugin.io.paf as paf_module

    query, target = genomes

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(paf_module, "write_paf", broken)
    bam = tmp_path / "ok.bam"
    with pytest.raises(RuntimeError):
        run_cli("-q", query, "-t", target, "--out", bam, "--out", tmp_path / "x.paf", "--backend", "cpu")
    assert not (tmp_path / "x.paf").exists() and not bam.exists()
    assert not [p for p in os.listdir(tmp_path) if ".part" in p or ".bai" in p]


def test_console_script_help_and_version():
    exe = shutil.which("gpualign")
    command = [exe] if exe else [sys.executable, "-m", "gpualign_plugin.cli.main"]
    version = subprocess.run(command + ["--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("gpualign ")
    helptext = subprocess.run(command + ["pairwise", "--help"], capture_output=True, text=True).stdout
    assert "examples:" in helptext and "--mode" in helptext and "--backend" in helptext


@pytest.mark.tools("samtools")
def test_local_placement_writes_pieces_supplementary_and_unmapped_records(tmp_path):
    """A rearranged contig (forward piece, inverted piece, piece from another record), a plain
    one and an unrelated one: primary + 2 supplementary with SA tags and hard clips, one
    primary, one unmapped; samtools flagstat counts them so; PAF has the same pieces."""
    chr1, chr2 = random_dna(3000), random_dna(2000)
    rearranged = chr1[100:700] + reverse_complement_text(chr1[1500:1900]) + chr2[200:500]
    target = tmp_path / "ref.fa"
    target.write_text(f">chr1\n{chr1}\n>chr2\n{chr2}\n")
    query = tmp_path / "contigs.fa"
    query.write_text(f">rearranged\n{rearranged}\n>plain\n{chr2[900:1400]}\n"
                     f">unrelated\n{random_dna(2000)}\n")
    bam, paf = tmp_path / "out.bam", tmp_path / "out.paf"
    assert run_cli("-q", query, "-t", target, "--out", bam, "--out", paf, "--backend", "cpu") == 0
    with pysam.AlignmentFile(str(bam)) as handle:
        records = list(handle)
    pieces = sorted((r.reference_name, r.reference_start, r.reference_end, r.is_reverse,
                     r.is_supplementary) for r in records if r.query_name == "rearranged")
    expected = [("chr1", 100, 700, False, False), ("chr1", 1500, 1900, True, True),
                ("chr2", 200, 500, False, True)]
    # A piece's ends may run a few residues on where the neighbouring sequence matches by chance.
    assert [(p[0], p[3], p[4]) for p in pieces] == [(e[0], e[3], e[4]) for e in expected]
    assert all(abs(p[1] - e[1]) <= 4 and abs(p[2] - e[2]) <= 4 for p, e in zip(pieces, expected))
    for record in records:
        if record.query_name == "rearranged":
            assert len(record.get_tag("SA").rstrip(";").split(";")) == 2
            assert record.get_tag("ZE") < 1e-100 and record.get_tag("ZB") > 300
            clip = "H" if record.is_supplementary else "S"
            assert clip in record.cigarstring and ("S" if clip == "H" else "H") not in record.cigarstring
            assert record.infer_read_length() == len(rearranged)
    unmapped = [r for r in records if r.is_unmapped]
    assert [(r.query_name, r.query_length, r.flag) for r in unmapped] == [("unrelated", 2000, 4)]
    assert records[-1].is_unmapped
    flagstat = subprocess.run(["samtools", "flagstat", "-O", "tsv", str(bam)], capture_output=True,
                              text=True, check=True).stdout
    counts = {fields[2]: int(fields[0]) for fields in (line.split("\t") for line in flagstat.splitlines())
              if fields[0].isdigit()}
    assert counts["primary"] == 3 and counts["supplementary"] == 2 and counts["secondary"] == 0
    assert counts["primary mapped"] == 2 and counts["mapped"] == 4
    rows = read_paf(str(paf))
    assert sorted((r["qname"], r["tp"]) for r in rows) == [("plain", "P"), ("rearranged", "P"),
                                                           ("rearranged", "P"), ("rearranged", "P")]
    assert all(r["ZE"] < 1e-100 and r["ZB"] > 300 for r in rows)


def test_end_to_end_modes_write_the_best_only_unless_secondary_is_asked(genomes, tmp_path):
    query, target = genomes
    paf = tmp_path / "out.paf"
    assert run_cli("-q", query, "-t", target, "--mode", "global", "--out", paf, "--backend", "cpu") == 0
    assert sorted((r["qname"], r["tp"]) for r in read_paf(str(paf))) == [("contig1", "P"), ("contig2", "P")]
    assert run_cli("-q", query, "-t", target, "--mode", "global", "--secondary", "--out", paf,
                   "--backend", "cpu") == 0
    rows = read_paf(str(paf))
    assert len(rows) == 8 and sum(r["tp"] == "S" for r in rows) == 6


@pytest.mark.parametrize("name", ["chr1,alt", "contig[2]", "*chr", "=chr", "chr\u00e9"])
def test_a_target_name_sam_cannot_hold_is_one_line_exit_2_before_any_work(tmp_path, capsys, name):
    # SAM's reference names exclude commas, brackets, quotes and a leading '*' or '=': a comma
    # made the SA:Z tag unparsable ('SA:Z:chr1,alt,5001,+,...'), the others are invalid SAM.
    (tmp_path / "q.fa").write_text(">q\nACGTACGTAAACCCGGGTTTAC\n")
    (tmp_path / "t.fa").write_text(f">ok\nACGT\n>{name} description\nACGTACGTAAACCCGGGTTTAC\n")
    common = ["-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--backend", "cpu"]
    assert main(["pairwise", *common, "--out", str(tmp_path / "o.paf"),
                 "--out", str(tmp_path / "o.bam")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path / "t.fa") in err[0] and f"record '{name}'" in err[0]
    assert "reference name" in err[0]
    assert sorted(os.listdir(tmp_path)) == ["q.fa", "t.fa"]
    assert main(["pairwise", *common, "--out", str(tmp_path / "o.paf")]) == 0  # PAF holds it


@pytest.mark.parametrize("mode", ["global", "semiglobal"])
def test_end_to_end_query_with_nothing_above_min_score_is_an_unmapped_record(tmp_path, mode):
    # As local placement and batch write a query without an alignment, so that samtools flagstat
    # counts every query: before, such a query had no record at all (15 of 31 counted).
    (tmp_path / "q.fa").write_text(">good\nACGTACGGTACCAGTTACGT\n>poor\nTTTTTTTTTTTTTTTTTTTT\n"
                                   ">unlisted\nACGTACGGTACCAGTTACGT\n")
    (tmp_path / "t.fa").write_text(">t\nACGTACGGTACCAGTTACGT\n")
    (tmp_path / "pairs.txt").write_text("good t\npoor t\n")
    assert main(["pairwise", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa"), "--mode", mode,
                 "--min-score", "10", "--pairs", str(tmp_path / "pairs.txt"), "--backend", "cpu",
                 "--out", str(tmp_path / "o.sam"), "--out", str(tmp_path / "o.paf")]) == 0
    with pysam.AlignmentFile(str(tmp_path / "o.sam")) as sam:
        assert [(r.query_name, r.flag) for r in sam] == [("good", 0), ("poor", 4)]
    assert [line.split("\t")[0] for line in (tmp_path / "o.paf").read_text().splitlines()] == ["good"]
