"""The columnar batch path (arrays in, arrays out, lines built in bulk) against the object path.

``gpualign batch`` reads FASTA in bulk, aligns into :class:`AlignmentColumns` and builds
SAM/PAF/TSV lines from arrays; here every piece is checked against the object path it
replaces: :func:`align_pair` pair by pair, :func:`place` on :class:`Alignment` objects,
and the pysam SAM writer / PAF writer / TSV lines of those objects, byte for byte, on
random mixed inputs (ties, N, IUPAC and U, lower case, both strands, one-residue reads,
queries in several pairs, protein).
"""

from __future__ import annotations

import subprocess
import sys
import zlib

import numpy as np
import pytest

from gpualign_plugin.batch.api import align_batch_strands, align_columns, align_strands_columns
from gpualign_plugin.batch import columns
from gpualign_plugin.batch.columns import SequencePairs, gather_segments
from gpualign_plugin.cli.main import main
from gpualign_plugin.io.columnar import gather_segments_parallel
from gpualign_plugin.io.fasta import read_fasta, read_fasta_arrays
from gpualign_plugin.io.paf import write_paf
from gpualign_plugin.io.sam import write_alignments
from gpualign_plugin.model import Alignment
from gpualign_plugin.pairwise.api import align_pair
from gpualign_plugin.pairwise.placement import first_listings, place, place_arrays
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes, reverse_complement_text

DNA = ScoringScheme.dna()
TIES = ScoringScheme.dna(1, -1, 0, 1)
PROTEIN = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
MODES = ("local", "global", "semiglobal")
TSV_HEADER = "qid\ttid\tscore\tqstart\tqend\ttstart\ttend\tcigar\tstrand\n"


def random_codes(rng, letters, lengths):
    return [rng.integers(0, letters, length).astype(np.uint8) for length in lengths]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
def test_numpy_gather_equals_the_parallel_kernel(dtype):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 200, 5000).astype(dtype)
    counts = rng.integers(0, 40, 300)
    counts[[0, 7, -1]] = 0  # empty segments, first and last among them
    starts = rng.integers(0, len(data) - 40, 300)
    starts[10:20] = starts[9]  # repeated and overlapping segments
    expected = [data[s:s + c].tolist() for s, c in zip(starts, counts)]
    results = [columns._gather_with_numpy(data, starts, counts), gather_segments(data, starts, counts),
               gather_segments_parallel(data, starts, counts)]
    for out, offsets in results:
        assert out.dtype == dtype and offsets[-1] == counts.sum()
        assert [out[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    empty = np.zeros(0, np.int64)
    for out, offsets in (columns._gather_with_numpy(data, empty, empty), gather_segments(data, empty, empty)):
        assert len(out) == 0 and out.dtype == dtype and offsets.tolist() == [0]


def test_a_small_gather_without_numba_loaded_does_not_load_it():
    code = ("import sys, numpy as np\n"
            "from gpualign_plugin.batch.columns import SequencePairs\n"
            "pairs = SequencePairs.from_list([(np.arange(5, dtype=np.uint8), np.arange(3, dtype=np.uint8))] * 4)\n"
            "queries, offsets = pairs.packed_queries()\n"
            "print(queries.tolist() == list(range(5)) * 4, ','.join(map(str, offsets)), 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "0,5,10,15,20", "False"]


@pytest.mark.parametrize("mode", MODES)
def test_columns_equal_align_pair_pair_by_pair_with_empty_and_one_residue_sequences(mode):
    rng = np.random.default_rng(3)
    lengths = [0, 1, 1, 2, 5, 17, 40]
    pairs = [(q, t) for q, t in zip(random_codes(rng, 4, rng.choice(lengths, 120)),
                                    random_codes(rng, 4, rng.choice(lengths, 120)))]
    for scheme in (DNA, TIES):
        columns = align_columns(SequencePairs.from_list(pairs), scheme, mode)
        assert columns.pairs() == [align_pair(q, t, scheme, mode) for q, t in pairs]


def test_both_strands_in_columns_equal_the_object_api_and_report_every_cell():
    rng = np.random.default_rng(4)
    pairs = list(zip(random_codes(rng, 5, rng.integers(1, 60, 200)),
                     random_codes(rng, 5, rng.integers(1, 60, 200))))
    cells = []
    columns, minus = align_strands_columns(SequencePairs.from_list(pairs), DNA, "local", "both",
                                           progress=cells.append)
    expected = align_batch_strands(pairs, DNA, "local", "both")
    assert [("-" if m else "+", p) for m, p in zip(minus.tolist(), columns.pairs())] == expected
    assert sum(cells) == 2 * sum(len(q) * len(t) for q, t in pairs)
    assert minus.any() and not minus.all()


@pytest.mark.parametrize("queries", ["repeated", "each once in order", "each once, gaps in the indices"])
def test_place_arrays_equals_place_on_repeated_queries_targets_and_ties(queries):
    rng = np.random.default_rng(5)
    count = 400
    query_index = {"repeated": rng.integers(0, 40, count), "each once in order": np.arange(count),
                   "each once, gaps in the indices": np.sort(rng.choice(5 * count, count, replace=False))}[queries]
    target_index = rng.integers(0, 30, count)
    score = rng.integers(-3, 6, count)
    minus = rng.random(count) < 0.5
    alignments = [Alignment(f"q{q}", f"t{t}", 10, 10, 0, 1, 0, 1, "-" if s else "+", int(v), None)
                  for q, t, v, s in zip(query_index, target_index, score, minus)]
    expected = place(alignments)
    order, primary, mapq = place_arrays(query_index, target_index, score, minus)
    got = [alignments[k] for k in order]
    assert [(a.query_id, a.target_id, a.strand, a.score) for a in got] == \
        [(a.query_id, a.target_id, a.strand, a.score) for a in expected]
    assert primary.tolist() == [a.is_primary for a in expected]
    assert mapq.tolist() == [a.mapq for a in expected]
    seen = set()
    assert first_listings(query_index).tolist() == [q not in seen and not seen.add(q) for q in query_index.tolist()]


def write_reads(tmp_path, rng, count, letters, protein=False):
    """Query and target FASTA of related random pairs, with the quirks of real files."""
    queries, targets = [], []
    for k in range(count):
        m = int(rng.choice([1, 2, 7, 30, 64, 150]))
        query = rng.choice(list(letters), m)
        target = query.copy()
        flips = rng.random(m) < 0.2
        target[flips] = rng.choice(list(letters), int(flips.sum()))
        if k % 3 == 0:
            target = np.concatenate([rng.choice(list(letters), int(rng.integers(0, 9))), target])
        if k % 4 == 1 and not protein:  # the read is the reverse complement of its window
            query = np.array(list(reverse_complement_text("".join(query))))
        if k % 5 == 2:
            query = np.char.lower(query)
        queries.append((f"r{k}", "".join(query)))
        targets.append((f"w{k}", "".join(target)))
    query_path, target_path = tmp_path / "q.fa", tmp_path / "t.fa"
    query_path.write_text("".join(f">{name} read {name}\n{text}\n" for name, text in queries))
    target_path.write_text("".join(f">{name}\n{text[:40]}\n{text[40:]}\n" for name, text in targets))
    return query_path, target_path


def object_outputs(tmp_path, query_path, target_path, scheme, mode, strands, pairs_file, cmdline):
    """The files the object path writes: align_batch_strands, place, the pysam/PAF writers, TSV lines."""
    from gpualign_plugin.io.pairs import read_pairs_file

    queries, targets = read_fasta(query_path, scheme), read_fasta(target_path, scheme)
    if pairs_file:
        by_query, by_target = {q.id: q for q in queries}, {t.id: t for t in targets}
        pairs = [(by_query[q], by_target[t]) for q, t in read_pairs_file(pairs_file, queries, targets)]
    else:
        pairs = list(zip(queries, targets))
    aligned = align_batch_strands([(q.codes, t.codes) for q, t in pairs], scheme, mode, strands)
    lines, alignments, placed_pairs = [TSV_HEADER], [], set()
    for (query, target), (strand, pair) in zip(pairs, aligned):
        if mode == "local" and pair.score <= 0:
            lines.append(f"{query.id}\t{target.id}\t0\t0\t0\t0\t0\t*\t+\n")
            continue
        m = len(query)
        q_start, q_end = (m - pair.query_end, m - pair.query_start) if strand == "-" else \
            (pair.query_start, pair.query_end)
        a = Alignment(query.id, target.id, m, len(target), q_start, q_end, pair.target_start,
                      pair.target_end, strand, pair.score, pair.cigar, mode)
        if (query.id, target.id) not in placed_pairs:  # a pair listed again is placed once
            placed_pairs.add((query.id, target.id))
            alignments.append(a)
        lines.append(f"{a.query_id}\t{a.target_id}\t{a.score}\t{a.query_start}\t{a.query_end}\t"
                     f"{a.target_start}\t{a.target_end}\t{a.cigar}\t{a.strand}\n")
    # The strand each pair did not keep ranks too (a second best or a tie in MAPQ), then is left
    # out: it stands in without a CIGAR.
    for (query, target), (strand, pair) in zip(pairs if strands == "both" else [], aligned):
        if (query.id, target.id) not in placed_pairs:
            continue
        placed_pairs.remove((query.id, target.id))
        codes = query.codes if strand == "-" else reverse_complement_codes(query.codes)
        other = align_pair(codes, target.codes, scheme, mode)
        if mode != "local" or other.score > 0:
            alignments.append(Alignment(query.id, target.id, len(query), len(target), 0, 0, 0, 0,
                                        "+" if strand == "-" else "-", other.score, None, mode))
    placed = [a for a in place(alignments) if a.cigar is not None]
    # A listed query without any alignment is an unmapped SAM/BAM record, as pairwise writes it.
    aligned_ids = {a.query_id for a in placed}
    unmapped = [q for q in dict.fromkeys(query for query, _ in pairs) if q.id not in aligned_ids]
    (tmp_path / "objects.tsv").write_text("".join(lines))
    records = ({q.id: q for q in queries}, {t.id: t for t in targets}) if scheme.is_dna else ()
    write_paf(tmp_path / "objects.paf", placed, *records)
    write_alignments(tmp_path / "objects.sam", placed, {q.id: q for q in queries}, targets, scheme,
                     cmdline, fmt="sam", unmapped=unmapped)
    write_alignments(tmp_path / "objects.bam", placed, {q.id: q for q in queries}, targets, scheme,
                     cmdline, fmt="bam", index=False, unmapped=unmapped)
    return unmapped


@pytest.mark.parametrize("case", [("dna", "local", "both"), ("dna", "global", "both"),
                                  ("dna", "semiglobal", "plus"), ("ties", "local", "both"),
                                  ("protein", "local", "plus"), ("protein", "global", "plus")])
@pytest.mark.parametrize("listed", [False, True])
def test_cli_files_equal_the_object_path_byte_for_byte(tmp_path, case, listed):
    alphabet, mode, strands = case
    scheme = {"dna": DNA, "ties": TIES, "protein": PROTEIN}[alphabet]
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()) % 1000 + listed)
    letters = "ACDEFGHIKLMNPQRSTVWY*" if alphabet == "protein" else \
        ("AC" if alphabet == "ties" else "ACGTNRYU")
    query_path, target_path = write_reads(tmp_path, rng, 90, letters, alphabet == "protein")
    options = ["--match", "1", "--mismatch", "-1", "--gap-open", "0", "--gap-extend", "1"] \
        if alphabet == "ties" else (["--matrix", "BLOSUM62"] if alphabet == "protein" else [])
    pairs_file = None
    if listed:  # reads in several pairs, windows in several, some pairs twice
        pairs_file = tmp_path / "pairs.txt"
        rows = [(int(rng.integers(0, 30)), int(rng.integers(0, 90))) for _ in range(120)]
        pairs_file.write_text("".join(f"r{q} w{t}\n" for q, t in rows + rows[:5]))
    args = ["batch", "-q", str(query_path), "-t", str(target_path), "--mode", mode, "--strand", strands,
            *options, *(["--pairs", str(pairs_file)] if listed else []),
            "--out", str(tmp_path / "bulk.tsv"), "--out", str(tmp_path / "bulk.paf"),
            "--out", str(tmp_path / "bulk.sam"), "--out", str(tmp_path / "bulk.bam")]
    assert main(args) == 0
    unmapped = object_outputs(tmp_path, query_path, target_path, scheme, mode, strands, pairs_file,
                              " ".join(["gpualign"] + args))
    if mode == "local" and alphabet == "dna" and not listed:
        assert unmapped  # the case holds reads without a local alignment (listed pairs may not)
    for ext in ("tsv", "paf", "sam"):
        assert (tmp_path / f"bulk.{ext}").read_bytes() == (tmp_path / f"objects.{ext}").read_bytes(), ext
    import pysam

    with pysam.AlignmentFile(str(tmp_path / "bulk.bam")) as bulk, \
            pysam.AlignmentFile(str(tmp_path / "objects.bam")) as objects:
        assert [r.to_string() for r in bulk] == [r.to_string() for r in objects]


def test_bulk_fasta_reader_equals_the_record_reader_and_falls_back_for_errors(tmp_path):
    path = tmp_path / "x.fa"
    path.write_text(">a desc\nACGTn\nRY\n\n>b\nu\n")
    arrays = read_fasta_arrays(path, DNA.alphabet)
    records = read_fasta(path, DNA)
    assert [arrays.record(k) for k in range(len(arrays))] == records
    assert [arrays.record(k).codes.tolist() for k in range(len(arrays))] == [r.codes.tolist() for r in records]
    path.write_text(">a\nACGT\n>b\nACJT\n")
    with pytest.raises(Exception) as bulk:
        read_fasta_arrays(path, DNA.alphabet)
    with pytest.raises(Exception) as single:
        read_fasta(path, DNA)
    assert str(bulk.value) == str(single.value) and "position 3" in str(bulk.value)


@pytest.mark.parametrize("case", ["bad_letter", "duplicate", "empty_record", "bad_pairs_line"])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case):
    queries = {"bad_letter": ">q0\nACGT\n>q1\nAC!T\n", "duplicate": ">q0\nACGT\n>q0\nACGT\n",
               "empty_record": ">q0\nACGT\n>q1\n", "bad_pairs_line": ">q0\nACGT\n>q1\nACGT\n"}[case]
    (tmp_path / "q.fa").write_text(queries)
    (tmp_path / "t.fa").write_text(">t0\nACGT\n>t1\nACGT\n")
    outs = [tmp_path / name for name in ("o.tsv", "o.sam", "o.paf")]
    args = ["batch", "-q", str(tmp_path / "q.fa"), "-t", str(tmp_path / "t.fa")]
    for out in outs:
        args += ["--out", str(out)]
    if case == "bad_pairs_line":
        (tmp_path / "pairs.txt").write_text("q0 t0\nq1 t1 extra\n")
        args += ["--pairs", str(tmp_path / "pairs.txt")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    expected = {"bad_letter": "q.fa: record 'q1': position 3: character '!' is not in the dna alphabet",
                "duplicate": "duplicate record name", "empty_record": "record has an empty sequence",
                "bad_pairs_line": "pairs.txt: line 2: expected two ids"}[case]
    assert err.startswith("gpualign: error:") and expected in err and "\n" not in err, err
    assert not any(out.exists() for out in outs)
