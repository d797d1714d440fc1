"""The striped SIMD score kernel against the row kernel, parasail and the plain-Python oracle.

The row kernel (:func:`gpualign_plugin.gotoh.score_kernel`) is the engine every other
engine is already checked against; parasail's striped kernels are the independent
SIMD reference (scores only: its end-cell tie rule is its own); the oracle follows
docs/ALGORITHMS.md literally, end cell included.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracles import gotoh as oracle

from gpualign_plugin import gotoh, striped
from gpualign_plugin.pairwise.cpu import STRIPED_MIN_CELLS, score_pair
from gpualign_plugin.scoring import ScoringScheme

parasail = pytest.importorskip("parasail",
                               reason="parasail is a test dependency (pip install -e .[test])")

MODES = {"local": gotoh.LOCAL, "global": gotoh.GLOBAL, "semiglobal": gotoh.SEMIGLOBAL}
PARASAIL = {"local": "sw", "global": "nw", "semiglobal": "sg_dx"}
SCHEMES = [
    ScoringScheme.dna(),
    ScoringScheme.dna(match=1, mismatch=-1, gap_open=0, gap_extend=1),
    ScoringScheme.dna(match=5, mismatch=-4, gap_open=10, gap_extend=1),
    ScoringScheme.from_matrix("BLOSUM62"),
    ScoringScheme.from_matrix("BLOSUM50", gap_open=0, gap_extend=2),
]


def random_text(rng, scheme, length):
    """Random residues (sometimes N/X and lowercase), or a low-complexity repeat (ties)."""
    letters = "ACGT" if scheme.is_dna else "ARNDCQEGHILKMFPSTWYV"
    if rng.random() < 0.3:
        unit = "".join(rng.choice(list(letters[:4] if scheme.is_dna else "RDQEHIKW"),
                                  size=int(rng.integers(1, 4))))
        return (unit * (length // len(unit) + 1))[:length]
    text = "".join(rng.choice(list(letters + ("N" if scheme.is_dna else "X")), size=length))
    return text.lower() if rng.random() < 0.2 else text


def related_text(rng, scheme, text):
    out = []
    for ch in text:
        r = rng.random()
        if r < 0.05:
            continue
        out.append(random_text(rng, scheme, 1) if r < 0.15 else ch)
    return "".join(out) or text


def random_case(rng, max_length):
    scheme = SCHEMES[int(rng.integers(len(SCHEMES)))]
    q = random_text(rng, scheme, int(rng.integers(1, max_length + 1)))
    if rng.random() < 0.5:
        t = related_text(rng, scheme, q)
    else:
        t = random_text(rng, scheme, int(rng.integers(1, max_length + 1)))
    return scheme, scheme.alphabet.encode(q), scheme.alphabet.encode(t)


def row_kernel(q, t, scheme, mode):
    return tuple(int(x) for x in gotoh.score_kernel(
        q, t, np.ascontiguousarray(scheme.matrix, dtype=np.int32), scheme.gap_open,
        scheme.gap_extend, MODES[mode], False))


def striped_score(q, t, scheme, mode):
    return striped.striped_score(q, t, np.ascontiguousarray(scheme.matrix, dtype=np.int32),
                                 scheme.gap_open, scheme.gap_extend, MODES[mode])


def parasail_score(q, t, scheme, mode, bits, kind="striped"):
    """parasail's score of the same problem (``kind`` striped or scan), and whether it saturated."""
    letters = scheme.alphabet.letters
    matrix = parasail.matrix_create(letters, 0, 0)
    for x in range(len(letters)):
        for y in range(len(letters)):
            matrix.set_value(x, y, int(scheme.matrix[x, y]))
    function = getattr(parasail, f"{PARASAIL[mode]}_{kind}_{bits}")
    # parasail's open is the first gap column's cost.
    result = function("".join(letters[c] for c in q), "".join(letters[c] for c in t),
                      scheme.gap_open + scheme.gap_extend, scheme.gap_extend, matrix)
    return result.score, result.saturated


@pytest.mark.parametrize("mode", MODES)
def test_random_cases_equal_the_row_kernel(mode):
    rng = np.random.default_rng(1700 + list(MODES).index(mode))
    for _ in range(400):
        scheme, q, t = random_case(rng, 300)
        assert striped_score(q, t, scheme, mode) == row_kernel(q, t, scheme, mode), \
            (scheme.name, scheme.gap_open, scheme.gap_extend, len(q), len(t))


@pytest.mark.parametrize("mode", MODES)
def test_small_cases_equal_the_plain_python_oracle(mode):
    rng = np.random.default_rng(1750 + list(MODES).index(mode))
    for _ in range(80):
        scheme, q, t = random_case(rng, 25)
        score, _, query_end, _, target_end, _ = oracle(q, t, scheme.matrix, scheme.gap_open,
                                                       scheme.gap_extend, mode)
        assert striped_score(q, t, scheme, mode) == (score, query_end, target_end)


@pytest.mark.parametrize("mode", MODES)
def test_scores_equal_parasail(mode):
    rng = np.random.default_rng(1780 + list(MODES).index(mode))
    for _ in range(100):
        scheme, q, t = random_case(rng, 300)
        ours = striped_score(q, t, scheme, mode)[0]
        assert (ours, False) == parasail_score(q, t, scheme, mode, 32, "scan")
        if scheme.gap_open == 0:
            # parasail's striped kernels stop their lazy-F loop too early when a gap
            # opens at no cost (Farrar's strict test; seen with parasail 1.3.4: 313
            # where its own scan, diagonal and plain kernels give 320).
            continue
        assert (ours, False) == parasail_score(q, t, scheme, mode, 32)
        score16, saturated = parasail_score(q, t, scheme, mode, 16)
        assert saturated or score16 == ours


def lane_columns(q, t, scheme, mode, threads=1):
    return striped.lane_columns(q, t, np.ascontiguousarray(scheme.matrix, dtype=np.int32),
                                scheme.gap_open, scheme.gap_extend, MODES[mode], threads=threads)


@pytest.mark.parametrize("mode", MODES)
def test_scores_past_16_bits_continue_in_32_bits(mode):
    # Identical sequences: the 16-bit pass starts (small scores, boundaries inside the
    # band) and its values pass 32767 part way, so the state is handed to 32-bit lanes.
    scheme = ScoringScheme.dna(match=5, mismatch=-4, gap_open=10, gap_extend=1)
    rng = np.random.default_rng(1800)
    q = rng.integers(0, 4, 7000, dtype=np.uint8)
    t = np.concatenate([rng.integers(0, 4, 50, dtype=np.uint8), q[:6900]])
    for a, b in ((q, t), (t, q)):
        expected = row_kernel(a, b, scheme, mode)
        assert expected[0] > 32767
        *result, sixteen, columns = lane_columns(a, b, scheme, mode)
        assert tuple(result) == expected and 0 < sixteen < columns
        assert parasail_score(a, b, scheme, mode, 32) == (expected[0], False)


def test_scores_below_16_bits_continue_in_32_bits():
    # Global poly-A against poly-C: every cell is all gaps, H(i, j) = -(i + j), below
    # -32768 near the far corner while every boundary value fits in 16 bits. (Local and
    # semiglobal values never fall below the lowest boundary value.)
    scheme = ScoringScheme.dna(match=1, mismatch=-9, gap_open=0, gap_extend=1)
    q = np.zeros(30000, dtype=np.uint8)
    t = np.ones(3000, dtype=np.uint8)
    for a, b in ((q, t), (t, q)):
        *result, sixteen, columns = lane_columns(a, b, scheme, "global")
        assert tuple(result) == row_kernel(a, b, scheme, "global") and 0 < sixteen < columns


@pytest.mark.parametrize("mode", MODES)
def test_score_pair_takes_the_striped_kernel_with_the_same_result(mode):
    rng = np.random.default_rng(1820)
    scheme = ScoringScheme.dna()
    for m, n in ((300, 400), (1500, 260), (2, 40000)):
        assert m * n >= STRIPED_MIN_CELLS
        base = rng.integers(0, 4, max(m, n), dtype=np.uint8)
        q, t = base[:m].copy(), base[:n]
        q[rng.integers(0, m, m // 10)] = rng.integers(0, 4, m // 10, dtype=np.uint8)
        result = score_pair(q, t, scheme, mode)
        assert (result.score, result.query_end, result.target_end) == \
            row_kernel(q, t, scheme, mode)


@pytest.mark.parametrize("mode", MODES)
def test_progress_in_column_groups_changes_nothing(mode, monkeypatch):
    # Reports every few columns (REPORT_CELLS made small): the cells add up to m * n,
    # arrive in several calls, and the result is the one-call kernel's, also when a group
    # ends exactly at the column where the values leave the 16-bit band, and when every
    # column is its own group.
    scheme = ScoringScheme.dna(match=5, mismatch=-4, gap_open=10, gap_extend=1)
    rng = np.random.default_rng(1830)
    q = rng.integers(0, 4, 14000, dtype=np.uint8)
    t = np.concatenate([rng.integers(0, 4, 50, dtype=np.uint8), q[:13900]])
    matrix = np.ascontiguousarray(scheme.matrix, dtype=np.int32)
    for a, b in ((q, t), (t, q), (q[:3000], t[:2000])):
        expected = lane_columns(a, b, scheme, mode)
        sixteen, walked = expected[3], expected[4]
        striped_len = len(a) * len(b) // walked
        if len(a) > 3000:
            assert 0 < 2 * sixteen <= walked  # the group ending at the hand-over is not the last
        for group in sorted({max(1, sixteen), 1, 97}):
            monkeypatch.setattr(striped, "REPORT_CELLS", group * striped_len)
            reports = []
            got = striped.lane_columns(a, b, matrix, scheme.gap_open, scheme.gap_extend,
                                       MODES[mode], reports.append)
            assert got == expected
            assert sum(reports) == len(a) * len(b) and all(r > 0 for r in reports)
            grouped = len(a) * len(b) >= 2 * group * striped_len
            assert len(reports) == (-(-walked // group) if grouped else 1)


def test_score_pair_reports_inside_one_pair(monkeypatch):
    monkeypatch.setattr(striped, "REPORT_CELLS", 200_000)
    rng = np.random.default_rng(1831)
    q = rng.integers(0, 4, 2000, dtype=np.uint8)
    t = rng.integers(0, 4, 3000, dtype=np.uint8)
    reports = []
    result = score_pair(q, t, ScoringScheme.dna(), "local", threads=1, progress=reports.append)
    assert result == score_pair(q, t, ScoringScheme.dna(), "local", threads=1)
    assert len(reports) > 10 and sum(reports) == len(q) * len(t)


def test_band_rows_cover_the_sequence_in_whole_vectors(monkeypatch):
    unit = striped.LANES * 4
    for band_max in (256, 512, striped.STRIPE_MAX):
        monkeypatch.setattr(striped, "BAND_ROWS", band_max)
        for length in (band_max + 1, 2 * band_max, 5 * band_max - 3, 383_462):
            rows = striped.band_rows(length)
            bands = -(-length // rows)
            assert rows % unit == 0 and rows <= band_max and bands == -(-length // band_max)
    # More threads than bands of BAND_ROWS: a band each while bands keep MIN_BAND_ROWS.
    monkeypatch.setattr(striped, "BAND_ROWS", striped.STRIPE_MAX)
    for length, threads, bands in ((100_000, 16, 16), (40_000, 16, 9), (383_462, 4, 12),
                                   (383_462, 16, 16), (8_191, 8, 1), (8_192, 8, 2)):
        rows = striped.band_rows(length, threads)
        assert rows % unit == 0 and -(-length // rows) == bands


@pytest.mark.parametrize("band_max, threads", [(256, 1), (512, 1), (512, 3)])
def test_long_local_pairs_in_bands_equal_the_row_kernel(monkeypatch, band_max, threads):
    # Pairs longer than STRIPE_MAX on both sides run in bands (made small here): each band
    # starts from the edge the band above leaves, and the end cells merge by the tie rule
    # (repeats give many ties across bands). With threads, more bands (of MIN_BAND_ROWS)
    # run at once, each a few columns (PIPELINE_CELLS) behind the one above.
    monkeypatch.setattr(striped, "STRIPE_MAX", 300)
    monkeypatch.setattr(striped, "BAND_ROWS", band_max)
    monkeypatch.setattr(striped, "MIN_BAND_ROWS", 256)
    monkeypatch.setattr(striped, "PIPELINE_CELLS", 256 * 7)
    rng = np.random.default_rng(1840 + band_max + threads)
    banded = 0
    for _ in range(150):
        scheme, q, t = random_case(rng, 2500)
        if min(len(q), len(t)) <= 300:
            continue
        *result, sixteen, columns = lane_columns(q, t, scheme, "local", threads)
        assert tuple(result) == row_kernel(q, t, scheme, "local"), (scheme.name, len(q), len(t))
        striped_length, walked = min(len(q), len(t)), max(len(q), len(t))
        assert columns == -(-striped_length // striped.band_rows(striped_length, threads)) * walked
        banded += columns > walked
    assert banded > 40


def test_bands_go_on_in_32_bits_where_their_edge_leaves_16_bits(monkeypatch):
    # The lower bands' edges carry the alignment's score past 32767: each such band starts
    # in 16-bit lanes and hands over at the column where its edge leaves the band.
    monkeypatch.setattr(striped, "STRIPE_MAX", 1000)
    monkeypatch.setattr(striped, "BAND_ROWS", 1024)
    scheme = ScoringScheme.dna(match=5, mismatch=-4, gap_open=10, gap_extend=1)
    rng = np.random.default_rng(1850)
    q = rng.integers(0, 4, 9000, dtype=np.uint8)
    t = np.concatenate([rng.integers(0, 4, 50, dtype=np.uint8), q[:8900],
                        rng.integers(0, 4, 300, dtype=np.uint8)])
    for a, b in ((q, t), (t, q)):
        expected = row_kernel(a, b, scheme, "local")
        assert expected[0] > 32767
        *result, sixteen, columns = lane_columns(a, b, scheme, "local")
        assert tuple(result) == expected and 0 < sixteen < columns
        reports = []
        monkeypatch.setattr(striped, "REPORT_CELLS", 1024 * 1000)
        matrix = np.ascontiguousarray(scheme.matrix, dtype=np.int32)
        got = striped.lane_columns(a, b, matrix, scheme.gap_open, scheme.gap_extend, gotoh.LOCAL,
                                   reports.append)
        assert got == (*result, sixteen, columns) and sum(reports) == len(a) * len(b)
        assert len(reports) > 9
