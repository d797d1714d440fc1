"""The GPU search score pass against the CPU one: identical score matrices, hits and output files.

Every test here needs a GPU (marker ``gpu``; conftest.py skips them elsewhere).
Random protein and DNA sets cover empty and one-residue sequences, query lengths
around the register block (32 rows) and the profile tile (128 rows), target counts
that are not multiples of the 64-lane batch, targets up to 3,000 residues, scores
near 0, tie-heavy two-letter sequences and scores beyond 16 bits. Small
``pair_cells`` send long items to the long-pair engine (intra-task), small ``split_cells``
cut items into chains of 32-row tasks (0: every item of more than 32 rows), a tiny
``memory_budget`` leaves one persistent block that takes every item (or chained task) in turn.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

from gpualign_plugin.cli.main import main
from gpualign_plugin.io.fasta import read_fasta
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes
from gpualign_plugin.search.api import score_database, search
from paths import DATA, REPO as ROOT

pytestmark = pytest.mark.gpu

PROTEIN = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
DNA = ScoringScheme.dna()



def gpu_scores(queries, targets, scheme, **options):
    from gpualign_plugin.search import gpu as gpu_search

    return gpu_search.score_database(queries, targets, scheme, **options)


def assert_same_scores(queries, targets, scheme,
                       variants=({}, {"pair_cells": 2_000}, {"use16": False}, {"split_cells": 0})):
    """GPU scores equal the CPU's, with the default routing and with each option set in ``variants``."""
    expected = score_database(queries, targets, scheme)
    for options in variants:
        got = gpu_scores(queries, targets, scheme, **options)
        assert got.dtype == np.int32 and got.shape == expected.shape
        mismatches = np.argwhere(got != expected)
        assert len(mismatches) == 0, (options, mismatches[:5].tolist(),
                                      [(int(got[q, t]), int(expected[q, t])) for q, t in mismatches[:5]])
    return expected


@pytest.mark.parametrize("whole", [True, False])
def test_packing_on_the_device_gives_the_cpu_packing(whole, monkeypatch):
    """Every batch of a random database, and a part of every third batch, packed on the GPU: the
    bytes, offsets, widths and lane targets of the CPU engine's interleave_records, from an
    upload of the whole database or of the part's records only."""
    import cupy

    from gpualign_plugin.search import cpu as search_kernels
    from gpualign_plugin.search import gpu as gpu_search

    from gpualign_plugin.runtime import kernels

    if not whole:
        monkeypatch.setattr(gpu_search, "WHOLE_UPLOAD_SHARE", 2**62)
    monkeypatch.setattr(kernels, "UPLOAD_CHUNK", 4099)  # many chunks, the last one short
    rng = np.random.default_rng(11)
    lengths = np.concatenate([rng.integers(1, 400, 700), [1, 1, 2500]])
    codes = np.concatenate(random_codes(rng, 20, lengths))
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    order = np.argsort(lengths, kind="stable")
    rows = gpu_search._batch_rows(order)
    for batches in (np.arange(len(rows)), np.arange(len(rows))[1::3]):
        part = gpu_search._pack_on_device(codes, offsets, rows[batches], 21, 0)
        chosen = rows[batches].ravel()
        packed, batch_offsets, widths, lane_target = search_kernels.interleave_records(
            codes, offsets, chosen[chosen >= 0], 21)
        assert np.array_equal(cupy.asnumpy(part.codes), packed)
        assert np.array_equal(part.batch_offsets, batch_offsets) and np.array_equal(part.widths, widths)
        assert np.array_equal(part.lane_target, lane_target)
        assert part.batch_residues.sum() == lengths[chosen[chosen >= 0]].sum()


@pytest.mark.parametrize("chunk", [1, 4096, 1 << 24])
def test_the_staged_upload_gives_the_array(tmp_path, chunk, monkeypatch):
    """kernels.upload through page-locked chunks (one byte, a page, more than the array) equals
    the host array: a memory-mapped database file, a 2-D int32 array, an empty one."""
    import cupy

    from gpualign_plugin.runtime import kernels

    monkeypatch.setattr(kernels, "UPLOAD_CHUNK", chunk)
    rng = np.random.default_rng(5)
    np.save(tmp_path / "codes.npy", rng.integers(0, 21, 50_001, dtype=np.uint8))
    mapped = np.load(tmp_path / "codes.npy", mmap_mode="r")
    for array in (mapped, rng.integers(-2**31, 2**31 - 1, (37, 129), dtype=np.int32), np.empty(0, np.uint8)):
        device = kernels.upload(array)
        assert device.dtype == array.dtype and device.shape == array.shape
        assert np.array_equal(cupy.asnumpy(device), array)


def few_blocks(targets) -> dict:
    """A memory budget with room for only one or two persistent blocks' scratch slots."""
    return {"memory_budget": int(1.2 * 8 * 64 * max(map(len, targets))) + 1_000_000}


def random_codes(rng, letters, lengths):
    return [rng.integers(0, letters, n).astype(np.uint8) for n in lengths]


def test_search_fixture_scores_equal_cpu():
    queries = read_fasta(os.path.join(DATA, "search_queries.fa"), PROTEIN)
    db = read_fasta(os.path.join(DATA, "search_db.fa"), PROTEIN)
    targets = [t.codes for t in db]
    assert_same_scores([q.codes for q in queries], targets, PROTEIN,
                       ({}, {"pair_cells": 5_000}, few_blocks(targets), {"use16": False},
                        {"split_cells": 0}, {"split_cells": 0, **few_blocks(targets)}))


def test_random_proteins_up_to_3000_residues_equal_cpu():
    rng = np.random.default_rng(17)
    query_lengths = [0, 1, 7, 8, 9, 31, 32, 33, 127, 128, 129, 300, 777]
    target_lengths = np.concatenate([[0, 1, 2, 63, 64, 65], rng.integers(0, 400, 180),
                                     rng.integers(1000, 3001, 17)])  # 203 targets: 4 batches, last partial
    queries = random_codes(rng, 20, query_lengths)
    targets = random_codes(rng, 20, rng.permutation(target_lengths))
    expected = assert_same_scores(queries, targets, PROTEIN,
                                  ({}, {"pair_cells": 100_000}, few_blocks(targets), {"use16": False},
                                   {"split_cells": 0}, {"split_cells": 50_000, **few_blocks(targets)}))
    assert (expected[0] == 0).all() and (expected[1:] > 0).any()


def test_chained_tasks_follow_the_rows_per_sweep(monkeypatch):
    """A chained task is one sweep of R rows, whatever R the 16-bit kernel is built with
    (scripts/search-bench times R = 16 beside the default 32)."""
    from gpualign_plugin.search import gpu as gpu_search

    rng = np.random.default_rng(23)
    queries = random_codes(rng, 20, [17, 40, 129, 500])
    targets = random_codes(rng, 20, rng.integers(1, 1500, 150))
    monkeypatch.setattr(gpu_search, "ROWS16", 16)
    assert_same_scores(queries, targets, PROTEIN, ({"split_cells": 0}, {"split_cells": 10_000}))


def test_dna_both_strands_and_scores_near_zero_equal_cpu():
    rng = np.random.default_rng(5)
    queries = random_codes(rng, 4, [1, 5, 33, 150, 500])
    oriented = [c for q in queries for c in (q, reverse_complement_codes(q))]
    targets = random_codes(rng, 4, rng.integers(0, 1200, 130))
    for scheme in (DNA, ScoringScheme.dna(1, -4, 6, 3)):  # the second: most scores 0, 1 or 2
        assert_same_scores(oriented, targets, scheme)


def test_tie_heavy_two_letter_sequences_equal_cpu():
    rng = np.random.default_rng(29)
    for scheme in (DNA, ScoringScheme.dna(1, -1, 0, 1), PROTEIN):
        queries = random_codes(rng, 2, [3, 16, 64, 200, 650])
        targets = random_codes(rng, 2, rng.integers(0, 900, 97))
        assert_same_scores(queries, targets, scheme, ({}, {"pair_cells": 1_000}, {"use16": False},
                                                      {"split_cells": 0}))


def test_scores_beyond_16_bits_and_large_matrices_equal_cpu():
    rng = np.random.default_rng(8)
    long = rng.integers(0, 4, 3400).astype(np.uint8)
    targets = [long, long[:1000]] + random_codes(rng, 4, rng.integers(0, 500, 70))
    # match 10: scores above 32,767; 1500/-2000: substitution scores outside int8, so every item
    # stays inter-task whatever pair_cells says.
    for scheme in (ScoringScheme.dna(10, -10, 5, 2), ScoringScheme.dna(1500, -2000, 900, 300)):
        expected = assert_same_scores([long[:3300], long[500:900]], targets, scheme)
    assert expected[0, 0] == 3300 * 1500
    # Proteins: identical tryptophan-rich sequences score 11 a residue, past 32,767 in the 16-bit
    # kernel (rescored in 32 bits), beside ordinary lanes of the same batch that stay 16-bit.
    protein = rng.integers(0, 20, 4000).astype(np.uint8)
    protein[np.arange(4000) % 3 != 0] = 17
    targets = [protein, protein[:2000], protein[100:3900]] + random_codes(rng, 20, rng.integers(1, 700, 90))
    expected = assert_same_scores([protein, protein[:700]], targets, PROTEIN)
    assert expected[0, 0] > 32767 and expected[0, 1] < 32767


def test_progress_reports_every_residue_once_and_the_cells():
    rng = np.random.default_rng(2)
    queries = random_codes(rng, 20, [0, 50, 400])
    targets = random_codes(rng, 20, rng.integers(0, 2000, 150))
    for options in ({}, {"pair_cells": 20_000}):
        reports = []
        gpu_scores(queries, targets, PROTEIN, on_progress=lambda r, c: reports.append((r, c)), **options)
        assert sum(r for r, _ in reports) == sum(map(len, targets))
        assert sum(c for _, c in reports) == sum(map(len, targets)) * sum(map(len, queries))


def test_whole_search_equals_cpu_on_the_fixture():
    queries = read_fasta(os.path.join(DATA, "search_queries.fa"), PROTEIN)
    db = read_fasta(os.path.join(DATA, "search_db.fa"), PROTEIN)
    db = db + [PROTEIN.encode(f"copy_of_{t.id}", t.text) for t in db[:10]]  # forced ties
    runs = [search(queries, enumerate(db), PROTEIN, 12345, len(db), top=8, chunk_residues=chunk,
                   backend=backend) for backend, chunk in (("cpu", 10**9), ("gpu", 10**9), ("gpu", 900))]
    assert runs[0].hits and runs[1].hits == runs[0].hits and runs[2].hits == runs[0].hits
    assert [h.alignment.cigar for h in runs[1].hits] == [h.alignment.cigar for h in runs[0].hits]


def test_hits_aligned_in_gpu_batches_and_by_the_long_pair_engine_equal_cpu(monkeypatch):
    from gpualign_plugin.batch import gpu as batch_gpu
    from gpualign_plugin.search import api
    from gpualign_plugin.search.database import read_database
    from gpualign_plugin.scoring import PROTEIN as ALPHABET

    queries = read_fasta(os.path.join(DATA, "search_queries.fa"), PROTEIN)
    database = read_database(os.path.join(DATA, "search_db.fa"), ALPHABET)
    cpu = search(queries, database, PROTEIN, 10**6, len(database), top=8)
    # The CPU's long-hit limit does not apply on the GPU: every hit goes to the batch path, and
    # there the longer ones (a lowered MAX_PAIR_CELLS) to the long-pair GPU engine.
    monkeypatch.setattr(api, "BATCH_CELLS", 40_000)
    long_pairs = []
    monkeypatch.setattr(api, "align_sequences", lambda *a, **k: pytest.fail("CPU traceback on the GPU"))
    for cells in (1 << 24, 40_000):
        monkeypatch.setattr(batch_gpu, "MAX_PAIR_CELLS", cells)
        gpu = search(queries, database, PROTEIN, 10**6, len(database), top=8, backend="gpu")
        assert cpu.hits and gpu.hits == cpu.hits
        long_pairs.append(sum(len(queries[h.query_index]) * len(database.record(h.target_index))
                              > cells for h in gpu.hits))
    assert long_pairs[0] == 0 and long_pairs[1] > 0


def test_whole_dna_search_both_strands_equals_cpu():
    rng = np.random.default_rng(12)
    targets = ["".join(rng.choice(list("ACGT"), n)) for n in rng.integers(20, 400, 70)]
    queries = [DNA.encode(f"q{k}", targets[k * 7][5:60]) for k in range(5)]
    db = [DNA.encode(f"t{k}", t) for k, t in enumerate(targets)]
    cpu, gpu = (search(queries, enumerate(db), DNA, 10**6, len(db), top=5, strands="both", backend=b)
                for b in ("cpu", "gpu"))
    assert cpu.hits and gpu.hits == cpu.hits


def test_cli_gpu_outputs_equal_cpu_byte_for_byte(tmp_path):
    query = os.path.join(ROOT, "resources", "proteins", "queries.fa")
    db = os.path.join(ROOT, "resources", "proteins", "database.fa")
    for backend in ("cpu", "gpu"):
        assert main(["search", "-q", query, "-d", db, "--backend", backend,
                     "--out-blast", str(tmp_path / f"{backend}.m8"),
                     "--out-tsv", str(tmp_path / f"{backend}.tsv"),
                     "--out-sam", str(tmp_path / f"{backend}.sam"),
                     "--stats", str(tmp_path / f"{backend}.json")]) == 0
    for suffix in ("m8", "tsv"):
        assert (tmp_path / f"cpu.{suffix}").read_bytes() == (tmp_path / f"gpu.{suffix}").read_bytes()

    def body(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("@PG")]

    assert body(tmp_path / "cpu.sam") == body(tmp_path / "gpu.sam")
    import json

    stats = json.loads((tmp_path / "gpu.json").read_text())
    assert stats["engine"] == "gpu" and stats["peak_gpu_memory_bytes"] > 0
    assert stats["cells"] == json.loads((tmp_path / "cpu.json").read_text())["cells"]


def test_a_gpu_search_of_a_prepared_database_loads_no_numba_and_equals_cpu(tmp_path):
    """The whole command as its own process, ``-X importtime``: hits packed with NumPy, aligned on
    the device, and no CuPy elementwise operation (whose first use imports cupyx, 0.43 s)."""
    query = os.path.join(ROOT, "resources", "proteins", "queries.fa")
    db = tmp_path / "db.gadb"
    assert main(["makedb", "--db", os.path.join(ROOT, "resources", "proteins", "database.fa"),
                 "--out", str(db)]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpualign_plugin.cli.main", "search",
                           "-q", query, "-d", str(db), "--backend", "gpu", "--out-blast", str(tmp_path / "gpu.m8"),
                           "--out-tsv", str(tmp_path / "gpu.tsv")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "gpualign_plugin.search.gpu" in imported and "gpualign_plugin.batch.gpu" in imported
    assert "numba" not in imported and "cupyx" not in imported
    assert main(["search", "-q", query, "-d", str(db), "--backend", "cpu", "--out-blast", str(tmp_path / "cpu.m8"),
                 "--out-tsv", str(tmp_path / "cpu.tsv")]) == 0
    for suffix in ("m8", "tsv"):
        assert (tmp_path / f"cpu.{suffix}").read_bytes() == (tmp_path / f"gpu.{suffix}").read_bytes()


@pytest.mark.parametrize("top", [1, 3, 10, 64, 191, 192, 500])
def test_the_device_selection_keeps_every_lane_at_or_above_the_top_th_score(top):
    """search.cu's top_floor and collect_candidates against NumPy's partition: ties, rows with
    nothing above 0, scores using all 31 bits, the 16-bit kernel's -1 marks, ``top`` >= lanes."""
    import cupy as cp

    from gpualign_plugin.search import gpu as gpu_search

    rng = np.random.default_rng(top)
    n_lanes = 3 * gpu_search.LANES
    scores = rng.integers(0, 40, (8, n_lanes)).astype(np.int32)
    scores[1] = 0
    scores[2] = rng.integers(0, 2**31 - 1, n_lanes)
    scores[3, ::5] = -1
    scores[4] = 17
    scores[5, 7] = 2**31 - 1
    scores[6, :100] = 0
    scores[7] = rng.integers(250, 262, n_lanes)  # digits on both sides of a byte boundary
    lane_target = rng.permutation(10 * n_lanes)[:n_lanes]
    found = gpu_search._device_top(cp.asarray(scores), lane_target, top, 0)
    for q, (values, indices) in enumerate(found):
        row = scores[q]
        floor = max(int(np.partition(row, n_lanes - top)[n_lanes - top]), 1) if n_lanes > top else 1
        want = sorted(zip(row[row >= floor].tolist(), lane_target[row >= floor].tolist()))
        assert sorted(zip(values.tolist(), indices.tolist())) == want, q


def _ranked(scores, indices, top):
    order = np.lexsort((indices, -scores.astype(np.int64)))[:top]
    return list(zip(scores[order].tolist(), indices[order].tolist()))


@pytest.mark.parametrize("devices,budget", [([0], None), ([0, 0], None), ([0, 0, 0], 3_000_000)],
                         ids=["one", "two-logical-devices", "three-parts-small-budget"])
def test_top_hits_on_devices_and_parts_equal_the_cpu_ranking(devices, budget):
    from gpualign_plugin.search import gpu as gpu_search
    from gpualign_plugin.search.database import read_database
    from gpualign_plugin.scoring import PROTEIN as ALPHABET

    rng = np.random.default_rng(31)
    db = read_database(os.path.join(DATA, "search_db.fa"), ALPHABET)
    queries = [db.target_codes(k) for k in (0, 5, 9)] + random_codes(rng, 20, [1, 40, 300])
    expected = score_database(queries, [db.target_codes(k) for k in range(len(db))], PROTEIN)
    span_order = db.order[db.order >= 3]  # a shard: records 3.. only
    found = gpu_search.top_hits(queries, db.codes, db.offsets, span_order, PROTEIN, 7, devices,
                                memory_budget=budget)
    for q, (scores, indices) in enumerate(found):
        assert set(indices.tolist()) <= set(span_order.tolist())
        live = np.arange(3, len(db))
        want = _ranked(expected[q, live], live, 7)
        assert _ranked(scores, indices, 7) == [w for w in want if w[0] > 0]


def test_cli_prepared_database_on_two_logical_devices_equals_cpu(tmp_path):
    query = os.path.join(ROOT, "resources", "proteins", "queries.fa")
    db = os.path.join(ROOT, "resources", "proteins", "database.fa")
    assert main(["makedb", "--db", db, "--out", str(tmp_path / "db.gadb")]) == 0
    runs = {"cpu": ["--backend", "cpu", "-d", db],
            "gpu": ["--backend", "gpu", "--devices", "0,0", "-d", str(tmp_path / "db.gadb")]}
    for name, options in runs.items():
        assert main(["search", "-q", query, *options, "--top", "5", "--out-blast", str(tmp_path / f"{name}.m8"),
                     "--out-tsv", str(tmp_path / f"{name}.tsv")]) == 0
    for suffix in ("m8", "tsv"):
        assert (tmp_path / f"cpu.{suffix}").read_bytes() == (tmp_path / f"gpu.{suffix}").read_bytes()


def _example_data() -> str | None:
    """Folder holding the MMseqs2 example query and database files, or None."""
    candidates = [os.environ.get("GPUALIGN_SEARCH_DATA", ""), os.path.join(ROOT, ".benchdata"),
                  os.path.join(ROOT, "shared", "data"),
                  os.path.join(ROOT, "..", "shared", "data"), "/work/shared/data"]
    for folder in candidates:
        if folder and os.path.exists(os.path.join(folder, "mmseqs_example_db.fasta.gz")):
            return folder
    return None


def _read_gz(path: str, scheme: ScoringScheme):
    with gzip.open(path, "rt") as handle:
        text = handle.read()
    records = []
    for block in text.split(">")[1:]:
        header, _, body = block.partition("\n")
        records.append(scheme.encode(header.split()[0], body.replace("\n", "")))
    return records


def test_example_database_slice_equals_cpu():
    # 53 queries (the first 50 and the 3 longest, up to 4,291 aa) x 2,030 targets (the first
    # 2,000 and the 30 longest, up to 8,081 aa): the benchmark's batches and its longest lanes,
    # all inter-task with the default settings, then with pairs above 4 M cells intra-task, items
    # above 1 M cells a lane chained, and every item whole.
    folder = _example_data()
    if folder is None:
        pytest.skip("MMseqs2 example data not found (set GPUALIGN_SEARCH_DATA)")
    queries = _read_gz(os.path.join(folder, "mmseqs_example_query.fasta.gz"), PROTEIN)
    db = _read_gz(os.path.join(folder, "mmseqs_example_db.fasta.gz"), PROTEIN)
    longest_queries = sorted(range(len(queries)), key=lambda k: -len(queries[k]))[:3]
    longest_targets = sorted(range(len(db)), key=lambda k: -len(db[k]))[:30]
    q = [queries[k].codes for k in range(50)] + [queries[k].codes for k in longest_queries]
    t = [db[k].codes for k in range(2000)] + [db[k].codes for k in longest_targets]
    assert_same_scores(q, t, PROTEIN, ({}, {"pair_cells": 1 << 22}, {"split_cells": 1 << 20}, {"split_cells": 1 << 62}))


def test_a_budget_below_one_block_is_a_memory_error_with_numbers():
    from gpualign_plugin.runtime.kernels import GpuMemoryError

    rng = np.random.default_rng(1)
    with pytest.raises(GpuMemoryError, match=r"needs [0-9.]+ MiB .* budget is [0-9.]+ MiB"):
        gpu_scores(random_codes(rng, 20, [50]), random_codes(rng, 20, [400] * 10), PROTEIN,
                   memory_budget=10_000)
