"""The CPU pairwise engine against Biopython, the plain-Python oracle and itself.

Every alignment checked here is re-scored from its CIGAR (model.score_cigar,
which also checks ``=``/``X`` columns against the residues).
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import biopython_aligner, gotoh

from gpualign_plugin.batch.api import align_batch, score_batch
from gpualign_plugin import striped
from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Cigar, PairAlignment, PairScore, score_cigar
from gpualign_plugin.pairwise import cpu as pairwise
from gpualign_plugin.pairwise.api import align_sequences
from gpualign_plugin.pairwise.cpu import align_pair, score_pair, score_pair_tiled
from gpualign_plugin.pairwise.modes import MODES
from gpualign_plugin.gotoh import STATE_H, cigar_from_ops
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes, reverse_complement_text
from gpualign_plugin.traceback.checkpoint import checkpointed_traceback

AMINO_ACIDS = "ARNDCQEGHILKMFPSTWYV"

SCHEMES = [
    ScoringScheme.dna(),
    ScoringScheme.dna(match=1, mismatch=-1, gap_open=0, gap_extend=1),
    ScoringScheme.dna(match=5, mismatch=-4, gap_open=10, gap_extend=1),
    ScoringScheme.dna(match=2, mismatch=-1, gap_open=1, gap_extend=3, ambiguity=0),
    ScoringScheme.from_matrix("BLOSUM62"),
    ScoringScheme.from_matrix("PAM30", gap_open=9, gap_extend=1),
    ScoringScheme.from_matrix("BLOSUM50", gap_open=0, gap_extend=2),
]
DNA_SCHEMES = [s for s in SCHEMES if s.is_dna]


def random_text(rng, scheme, length, tie_heavy=False):
    """Random residues; ``tie_heavy`` gives low-complexity repeats (many equal-score paths)."""
    if scheme.is_dna:
        letters = "ACGT" if rng.random() < 0.8 else "ACGTN"
    else:
        letters = AMINO_ACIDS if rng.random() < 0.8 else AMINO_ACIDS + "XBZ"
    if tie_heavy:
        # Protein repeats avoid A, C, G, T and N so that they never look like nucleotides.
        pool = letters[:4] if scheme.is_dna else "RDQEHILKMFPSWYV"
        unit = "".join(rng.choice(list(pool), size=int(rng.integers(1, 4))))
        text = (unit * (length // len(unit) + 1))[:length]
        if length and rng.random() < 0.5:
            pos = int(rng.integers(length))
            text = text[:pos] + str(rng.choice(list(letters))) + text[pos + 1:]
        return text
    return "".join(rng.choice(list(letters), size=length))


def related_text(rng, scheme, text, rate=0.15):
    """A mutated copy of ``text`` (substitutions, insertions, deletions)."""
    letters = "ACGT" if scheme.is_dna else AMINO_ACIDS
    out = []
    for ch in text:
        r = rng.random()
        if r < rate / 3:
            continue
        if r < 2 * rate / 3:
            out.append(str(rng.choice(list(letters))))
        else:
            out.append(ch)
        if rng.random() < rate / 3:
            out.append(str(rng.choice(list(letters))))
    return "".join(out)


def random_case(rng, max_length, tie_heavy=None):
    """A random ``(scheme, query_codes, target_codes)``; lengths 0..max_length, sometimes related."""
    scheme = SCHEMES[int(rng.integers(len(SCHEMES)))]
    ties = rng.random() < 0.3 if tie_heavy is None else tie_heavy
    q = random_text(rng, scheme, int(rng.integers(0, max_length + 1)), ties)
    if rng.random() < 0.5 and q:
        t = related_text(rng, scheme, q)
        if rng.random() < 0.5:
            t = random_text(rng, scheme, int(rng.integers(0, 6))) + t + \
                random_text(rng, scheme, int(rng.integers(0, 6)))
    else:
        t = random_text(rng, scheme, int(rng.integers(0, max_length + 1)), ties)
    return scheme, scheme.alphabet.encode(q), scheme.alphabet.encode(t)


def check_alignment(result: PairAlignment, q, t, scheme, mode):
    """Bounds, mode-specific extents, and the CIGAR re-scores to the reported score."""
    assert 0 <= result.query_start <= result.query_end <= len(q)
    assert 0 <= result.target_start <= result.target_end <= len(t)
    assert result.cigar.query_length() == result.query_end - result.query_start
    assert result.cigar.target_length() == result.target_end - result.target_start
    rescored = score_cigar(result.cigar, q[result.query_start:result.query_end],
                           t[result.target_start:result.target_end], scheme)
    assert rescored == result.score
    if mode == "global":
        assert (result.query_start, result.query_end) == (0, len(q))
        assert (result.target_start, result.target_end) == (0, len(t))
    elif mode == "semiglobal":
        assert (result.query_start, result.query_end) == (0, len(q))
    elif result.cigar.runs:
        # A local alignment starts and ends with aligned residues.
        assert result.cigar.runs[0][1] in "=X" and result.cigar.runs[-1][1] in "=X"


def oracle_tuple(result: PairAlignment):
    return (result.score, result.query_start, result.query_end, result.target_start,
            result.target_end, str(result.cigar) if result.cigar.runs else "")


def run_oracle(q, t, scheme, mode):
    return gotoh(q, t, scheme.matrix, scheme.gap_open, scheme.gap_extend, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["dna", "protein"])
def test_scores_equal_biopython_optimum(mode, kind):
    rng = np.random.default_rng(["dna", "protein"].index(kind) * 10 + MODES.index(mode))
    schemes = [s for s in SCHEMES if s.is_dna == (kind == "dna")]
    cases = 0
    while cases < 120:
        scheme = schemes[cases % len(schemes)]
        length_q = int(rng.integers(1, 4)) if cases < 20 else int(rng.integers(1, 60))
        q_text = random_text(rng, scheme, length_q, tie_heavy=cases % 5 == 0)
        t_text = (related_text(rng, scheme, q_text) if cases % 2 else
                  random_text(rng, scheme, int(rng.integers(1, 60)), tie_heavy=cases % 5 == 0))
        if not t_text:
            continue
        q = scheme.alphabet.encode(q_text)
        t = scheme.alphabet.encode(t_text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = biopython_aligner(scheme, mode).score(t_text, q_text)
        assert score_pair(q, t, scheme, mode).score == expected, (q_text, t_text, scheme.name)
        result = align_pair(q, t, scheme, mode)
        assert result.score == expected
        check_alignment(result, q, t, scheme, mode)
        cases += 1


def test_empty_sequences_follow_the_mode_boundaries():
    scheme = ScoringScheme.dna(gap_open=5, gap_extend=2)
    acg = scheme.alphabet.encode("ACG")
    empty = scheme.alphabet.encode("")
    for q, t in [(empty, empty), (acg, empty), (empty, acg)]:
        assert align_pair(q, t, scheme, "local") == PairAlignment(0, 0, 0, 0, 0, Cigar(()))
        assert score_pair(q, t, scheme, "local").score == 0
    assert align_pair(empty, empty, scheme, "global") == PairAlignment(0, 0, 0, 0, 0, Cigar(()))
    assert align_pair(empty, acg, scheme, "global") == \
        PairAlignment(-11, 0, 0, 0, 3, Cigar.from_string("3D"))
    assert align_pair(acg, empty, scheme, "global") == \
        PairAlignment(-11, 0, 3, 0, 0, Cigar.from_string("3I"))
    assert align_pair(empty, acg, scheme, "semiglobal") == \
        PairAlignment(0, 0, 0, 0, 0, Cigar(()))
    assert align_pair(acg, empty, scheme, "semiglobal") == \
        PairAlignment(-11, 0, 3, 0, 0, Cigar.from_string("3I"))
    for mode in MODES:
        for q, t in [(empty, empty), (acg, empty), (empty, acg)]:
            assert oracle_tuple(align_pair(q, t, scheme, mode)) == run_oracle(q, t, scheme, mode)


@pytest.mark.parametrize("mode", MODES)
def test_alignments_equal_plain_python_oracle(mode):
    rng = np.random.default_rng(100 + MODES.index(mode))
    for case in range(250):
        scheme, q, t = random_case(rng, 3 if case < 30 else 30, tie_heavy=case % 2 == 0)
        result = align_pair(q, t, scheme, mode)
        assert oracle_tuple(result) == run_oracle(q, t, scheme, mode), (q, t, scheme.name)
        check_alignment(result, q, t, scheme, mode)


@pytest.mark.parametrize("mode", MODES)
def test_checkpointed_traceback_equals_full_matrix(mode):
    rng = np.random.default_rng(200 + MODES.index(mode))
    for case in range(1000):
        scheme, q, t = random_case(rng, 200 if case % 10 == 0 else 60)
        full = align_pair(q, t, scheme, mode)
        # From a budget smaller than one row (one-row bands, one saved row per level) to a few KB.
        budget = int(rng.choice([1, 16, 100, 700, 3000]))
        assert align_pair(q, t, scheme, mode, memory_budget=budget) == full, (q, t, budget)
        check_alignment(full, q, t, scheme, mode)


def _traced(problem, end: PairScore, budget: int):
    """Start cell and operations of ``problem``'s checkpointed traceback from ``end``."""
    start = checkpointed_traceback(problem, end.query_end, end.target_end, STATE_H, budget)
    return start.row, start.col, problem.ops[:problem.length].tobytes()


@pytest.mark.parametrize("mode", MODES)
def test_traceback_of_reaching_cells_only_equals_the_full_rectangle(mode):
    """The tracebacks of every mode compute only the cells that may lie on a path reaching
    the score at the end cell (pairwise.cpu.ReachingGotohProblem): the same path as every cell
    above and left of the end (GotohProblem), on random, related and tie-heavy pairs of every
    scheme, with budgets from one-row bands up; align_pair returns it, also when it first
    leaves out the rows and columns above and left of every optimal local start
    (pairwise.cpu.local_start_corner), and when it is given the end of its own pass (as
    placement gives it)."""
    rng = np.random.default_rng(650 + MODES.index(mode))
    for case in range(1500):
        scheme, q, t = random_case(rng, 200 if case % 10 == 0 else 60, tie_heavy=case % 3 == 0)
        q, t, matrix, mode_code = pairwise._prepare(q, t, scheme, mode)
        end = score_pair(q, t, scheme, mode)
        if mode == "local" and end.score <= 0:
            continue
        budget = int(rng.choice([1, 16, 100, 700, 10**6]))
        full = _traced(pairwise.GotohProblem(q, t, matrix, scheme, mode_code), end, budget)
        reaching = pairwise.ReachingGotohProblem(q, t, matrix, scheme, end, None, mode_code)
        assert _traced(reaching, end, budget) == full, (q, t, scheme.name, budget)
        aligned = align_pair(q, t, scheme, mode, memory_budget=budget)
        assert (aligned.query_start, aligned.target_start, aligned.cigar) == \
            (full[0], full[1], cigar_from_ops(np.frombuffer(full[2], dtype=np.uint8)))
        assert align_pair(q, t, scheme, mode, memory_budget=budget, prune=False) == aligned
        if mode == "local":
            given = align_pair(q[:end.query_end], t[:end.target_end], scheme, "local", end=end)
            assert given == aligned


def _start_corner_oracle(q, t, scheme, end: PairScore) -> tuple[int, int]:
    """Plain Python: global Gotoh scores of every suffix pair ending at ``end``'s cell (the
    reversed prefixes, anchored at the end); the smallest row and column of a suffix pair
    scoring ``end.score``."""
    a, b = q[:end.query_end][::-1], t[:end.target_end][::-1]
    o, e, low = scheme.gap_open, scheme.gap_extend, -10**9
    H = [[low] * (len(b) + 1) for _ in range(len(a) + 1)]
    E = [[low] * (len(b) + 1) for _ in range(len(a) + 1)]
    F = [[low] * (len(b) + 1) for _ in range(len(a) + 1)]
    H[0][0] = 0
    for i in range(len(a) + 1):
        for j in range(len(b) + 1):
            if i:
                F[i][j] = max(H[i - 1][j] - o - e, F[i - 1][j] - e)
            if j:
                E[i][j] = max(H[i][j - 1] - o - e, E[i][j - 1] - e)
            if i or j:
                diagonal = H[i - 1][j - 1] + int(scheme.matrix[a[i - 1], b[j - 1]]) if i and j else low
                H[i][j] = max(diagonal, E[i][j], F[i][j])
    starts = [(i, j) for i in range(len(a) + 1) for j in range(len(b) + 1) if H[i][j] == end.score]
    return end.query_end - max(i for i, _ in starts), end.target_end - max(j for _, j in starts)


def test_local_start_corner_equals_the_plain_python_suffix_scores():
    """The pruned anchored pass over the reversed prefixes finds the same corner as every
    suffix pair's global score, on random, related and tie-heavy pairs of every scheme."""
    rng = np.random.default_rng(652)
    for case in range(300):
        scheme, q, t = random_case(rng, 40, tie_heavy=case % 3 == 0)
        q, t, matrix, _ = pairwise._prepare(q, t, scheme, "local")
        end = score_pair(q, t, scheme, "local")
        if end.score > 0:
            assert pairwise.local_start_corner(q, t, matrix, scheme, end) == \
                _start_corner_oracle(q, t, scheme, end), (q, t, scheme.name)


@pytest.mark.parametrize("mode", MODES)
def test_traceback_of_a_related_pair_computes_a_band_of_the_rectangle(mode):
    """On a 3 kbp pair at 97% identity (local, semiglobal: inside 1 kbp of unrelated flanks) the reaching
    cells are a small part of the rectangle (the band, and where a local path may start):
    counted over the forward pass and the direction pass, under an eighth of the rectangle each."""
    rng = np.random.default_rng(651)
    scheme = SCHEMES[0]
    q_text = random_text(rng, scheme, 3000)
    flank = 0 if mode == "global" else 1000
    q = scheme.alphabet.encode(q_text)
    t = scheme.alphabet.encode(random_text(rng, scheme, flank) + related_text(rng, scheme, q_text, 0.03)
                               + random_text(rng, scheme, flank))
    q, t, matrix, mode_code = pairwise._prepare(q, t, scheme, mode)
    end = score_pair(q, t, scheme, mode)
    problem = pairwise.ReachingGotohProblem(q, t, matrix, scheme, end, None, mode_code)
    path = _traced(problem, end, 2**16)
    assert path == _traced(pairwise.GotohProblem(q, t, matrix, scheme, mode_code), end, 2**16)
    assert 0 < problem.cells < 2 * end.query_end * end.target_end / 8


def test_checkpointed_traceback_on_repeats_crossing_many_bands():
    scheme = ScoringScheme.dna()
    q = scheme.alphabet.encode("AC" * 150 + "A" * 100)
    t = scheme.alphabet.encode("ACC" * 80 + "A" * 130 + "CA" * 40)
    for mode in MODES:
        full = align_pair(q, t, scheme, mode)
        for budget in (64, 512, 4096):
            assert align_pair(q, t, scheme, mode, memory_budget=budget) == full
        assert oracle_tuple(full) == run_oracle(q, t, scheme, mode)
        check_alignment(full, q, t, scheme, mode)


def test_checkpointed_traceback_on_long_related_sequences():
    # 1.5 kbp with a 60 kB budget: three levels of checkpoints, bands of 40 rows.
    rng = np.random.default_rng(600)
    for scheme in (SCHEMES[0], SCHEMES[4]):
        q_text = random_text(rng, scheme, 1500)
        t_text = random_text(rng, scheme, 150) + related_text(rng, scheme, q_text) + \
            random_text(rng, scheme, 150)
        q = scheme.alphabet.encode(q_text)
        t = scheme.alphabet.encode(t_text)
        for mode in MODES:
            full = align_pair(q, t, scheme, mode)
            assert align_pair(q, t, scheme, mode, memory_budget=60_000) == full
            check_alignment(full, q, t, scheme, mode)


@pytest.mark.parametrize("mode", MODES)
def test_batches_equal_one_by_one(mode):
    rng = np.random.default_rng(300 + MODES.index(mode))
    for scheme in (SCHEMES[0], SCHEMES[4]):
        pairs = []
        for k in range(60):
            q_text = random_text(rng, scheme, int(rng.integers(0, 80)), k % 3 == 0)
            t_text = related_text(rng, scheme, q_text) if k % 2 else \
                random_text(rng, scheme, int(rng.integers(0, 80)), k % 3 == 0)
            pairs.append((scheme.alphabet.encode(q_text), scheme.alphabet.encode(t_text)))
        assert score_batch(pairs, scheme, mode) == [score_pair(q, t, scheme, mode) for q, t in pairs]
        assert align_batch(pairs, scheme, mode) == [align_pair(q, t, scheme, mode) for q, t in pairs]
    assert score_batch([], SCHEMES[0], mode) == [] and align_batch([], SCHEMES[0], mode) == []


def test_align_pair_from_python_threads_equals_serial():
    # The kernels release the GIL (nogil); callers such as pairwise_records use thread pools.
    rng = np.random.default_rng(700)
    cases = [random_case(rng, 120) for _ in range(40)]
    serial = [align_pair(q, t, scheme, mode) for scheme, q, t in cases for mode in MODES]
    with ThreadPoolExecutor(max_workers=2) as pool:
        threaded = list(pool.map(lambda job: align_pair(job[1], job[2], job[0], job[3]),
                                 [(scheme, q, t, mode) for scheme, q, t in cases
                                  for mode in MODES]))
    assert threaded == serial


def test_pair_scorer_gives_each_pair_its_score_pair_in_order_and_counts_progress():
    """cpu.PairScorer (the CPU engine's scorer in local placement) scores pairs of several
    sizes on a pool, the largest first, and returns each pair's own local score_pair."""
    rng = np.random.default_rng(710)
    scheme = SCHEMES[0]
    targets = [scheme.encode(f"t{k}", random_text(rng, scheme, n)).codes
               for k, n in enumerate((900, 60, 4000))]
    pairs = []
    for _ in range(30):
        k = int(rng.integers(len(targets)))
        t0 = int(rng.integers(len(targets[k])))
        t1 = int(rng.integers(t0 + 1, len(targets[k]) + 1))
        source = targets[k][t0:t1]
        text = scheme.alphabet.decode(source[:200]) if rng.random() < 0.5 else random_text(rng, scheme, 150)
        q = scheme.encode("q", related_text(rng, scheme, text) or "A").codes
        pairs.append((q, k, t0, t1))
    expected = [score_pair(q, targets[k][t0:t1], scheme, "local") for q, k, t0, t1 in pairs]
    cells = []
    scorer = pairwise.PairScorer(targets, scheme, threads=2, progress=cells.append)
    assert scorer.score(pairs) == expected and scorer.score([]) == []
    total = sum(len(q) * (t1 - t0) for q, _, t0, t1 in pairs)
    assert sum(cells) == total == scorer.swept_cells and any(e.score > 20 for e in expected)


def test_pair_scorer_gives_a_long_pair_its_share_of_the_threads(monkeypatch):
    """A pair holding most of a call's cells runs its bands on its share of the threads
    (bands made small here); the scores are score_pair's on one thread."""
    monkeypatch.setattr(striped, "MIN_BAND_ROWS", 256)
    rng = np.random.default_rng(720)
    scheme = ScoringScheme.dna()
    genome = rng.integers(0, 4, 6000, dtype=np.uint8)
    contig = genome[1000:3500].copy()
    contig[rng.integers(0, len(contig), 100)] = rng.integers(0, 4, 100, dtype=np.uint8)
    pairs = [(contig, 0, 0, 6000), (contig[:300], 0, 0, 6000), (genome[:50], 0, 100, 400)]
    scorer = pairwise.PairScorer([genome], scheme)
    scorer.threads = 4  # as on a 4-core machine (score_pair caps what it is given at Numba's)
    shares = []
    share = scorer._share
    monkeypatch.setattr(scorer, "_share", lambda *args: shares.append(share(*args)) or shares[-1])
    expected = [score_pair(q, genome[t0:t1], scheme, "local", threads=1) for q, _, t0, t1 in pairs]
    assert scorer.score(pairs) == expected and expected[0].score > 4000
    cells = [len(q) * (t1 - t0) for q, _, t0, t1 in pairs]
    assert sorted(shares) == [1, 1, 4] and share(len(contig), 6000, cells[0], sum(cells)) == 4
    assert share(len(contig), 6000, 10, 80) == 1 and share(len(contig), 6000, 10, 40) == 1
    assert share(len(contig), 6000, 30, 80) == 2
    # Where the bands could not use them (too short to cut), a pair keeps one thread.
    assert share(300, 400, 10**9, 10**9) == 1


@pytest.mark.parametrize("mode", MODES)
def test_score_pair_agrees_with_align_pair(mode):
    rng = np.random.default_rng(400 + MODES.index(mode))
    for _ in range(200):
        scheme, q, t = random_case(rng, 70)
        score = score_pair(q, t, scheme, mode)
        result = align_pair(q, t, scheme, mode)
        assert (score.score, score.query_end, score.target_end) == \
            (result.score, result.query_end, result.target_end)


@pytest.mark.parametrize("mode", MODES)
def test_minus_strand_aligns_the_reverse_complement(mode):
    rng = np.random.default_rng(500 + MODES.index(mode))
    for _ in range(60):
        scheme = DNA_SCHEMES[int(rng.integers(len(DNA_SCHEMES)))]
        t_text = random_text(rng, scheme, int(rng.integers(1, 80)))
        q_text = related_text(rng, scheme, t_text) or "A"
        if rng.random() < 0.5:
            # The query really is on the minus strand of the target half of the time.
            q_text = reverse_complement_text(q_text)
        query = scheme.encode("q", q_text)
        target = scheme.encode("t", t_text)
        m = len(query)
        by_hand = align_pair(reverse_complement_codes(query.codes), target.codes, scheme, mode)
        minus = align_sequences(query, target, scheme, mode, strand="-")
        if by_hand.score <= 0 and mode == "local":
            assert minus is None
            continue
        assert minus.strand == "-"
        assert (minus.score, str(minus.cigar)) == (by_hand.score, str(by_hand.cigar))
        assert (minus.query_start, minus.query_end) == (m - by_hand.query_end,
                                                        m - by_hand.query_start)
        assert (minus.target_start, minus.target_end) == (by_hand.target_start, by_hand.target_end)
        assert minus.recompute_score(query.codes, target.codes, scheme) == minus.score
        plus = align_sequences(query, target, scheme, mode, strand="+")
        if plus is not None:
            assert plus.recompute_score(query.codes, target.codes, scheme) == plus.score
            assert (plus.query_id, plus.target_id, plus.mode) == ("q", "t", mode)


def test_no_local_alignment_gives_none():
    scheme = ScoringScheme.dna()
    query = scheme.encode("q", "AAAA")
    target = scheme.encode("t", "CCCC")
    assert align_sequences(query, target, scheme, "local") is None
    assert align_sequences(query, target, scheme, "global").cigar == Cigar.from_string("4X")


def test_bad_arguments_are_refused():
    scheme = ScoringScheme.dna()
    codes = scheme.alphabet.encode("ACGT")
    with pytest.raises(ValueError, match="mode"):
        score_pair(codes, codes, scheme, "glocal")
    with pytest.raises(ValueError, match="minus strand"):
        protein = ScoringScheme.from_matrix("BLOSUM62")
        seq = protein.encode("p", "MKV")
        align_sequences(seq, seq, protein, "local", strand="-")
    huge = ScoringScheme.dna(match=1000, mismatch=-1000, gap_open=1000, gap_extend=1000)
    long_codes = np.zeros(300_000, dtype=np.uint8)
    with pytest.raises(InputError, match="overflow"):
        score_pair(long_codes, long_codes, huge, "local")


def test_tie_break_rule_on_a_hand_worked_example():
    # Query AA vs target AAA, global, match 2 / mismatch -3, open 5 / extend 2: the score
    # is 4 - 7 = -3 whichever target A is skipped. The traceback prefers the diagonal at
    # (2, 3) and (1, 2), so the deletion is taken last: at the start of the alignment.
    scheme = ScoringScheme.dna()
    q = scheme.alphabet.encode("AA")
    t = scheme.alphabet.encode("AAA")
    assert align_pair(q, t, scheme, "global") == \
        PairAlignment(-3, 0, 2, 0, 3, Cigar.from_string("1D2="))
    # Local: the first maximum in row-major order ends the alignment.
    assert align_pair(q, t, scheme, "local") == \
        PairAlignment(4, 0, 2, 0, 2, Cigar.from_string("2="))


codes_dna = st.text(alphabet="ACGT", max_size=40)


@settings(max_examples=150, deadline=None)
@given(codes_dna, codes_dna, st.sampled_from(MODES), st.sampled_from(DNA_SCHEMES))
def test_property_matches_oracle_and_rescoring(q_text, t_text, mode, scheme):
    q = scheme.alphabet.encode(q_text)
    t = scheme.alphabet.encode(t_text)
    result = align_pair(q, t, scheme, mode)
    assert oracle_tuple(result) == run_oracle(q, t, scheme, mode)
    check_alignment(result, q, t, scheme, mode)


@settings(max_examples=100, deadline=None)
@given(codes_dna, codes_dna, st.sampled_from(["local", "global"]))
def test_property_local_and_global_scores_are_symmetric(q_text, t_text, mode):
    scheme = ScoringScheme.dna()
    q = scheme.alphabet.encode(q_text)
    t = scheme.alphabet.encode(t_text)
    assert score_pair(q, t, scheme, mode).score == score_pair(t, q, scheme, mode).score


# The tiled wavefront kernel (score_pair with several threads on long pairs). Tiny
# tiles make thousands of tiles per pair, so every boundary and corner hand-over and
# the lexicographic reduction of per-tile bests is exercised on short sequences.

TILE_SIZES = (1, 2, 3, 7, 16)


@pytest.mark.parametrize("mode", MODES)
def test_tiled_score_equals_row_kernel_on_random_cases(mode):
    rng = np.random.default_rng(900 + MODES.index(mode))
    for case in range(1500):
        # Mostly short pairs (many tiles each), some up to 300 residues.
        scheme, q, t = random_case(rng, 300 if case % 10 == 0 else 40,
                                   tie_heavy=True if case % 3 == 0 else None)
        tile_rows = int(rng.choice(TILE_SIZES))
        tile_cols = int(rng.choice(TILE_SIZES))
        expected = score_pair(q, t, scheme, mode, threads=1)
        assert score_pair_tiled(q, t, scheme, mode, tile_rows, tile_cols, threads=2) == \
            expected, (scheme.name, len(q), len(t), tile_rows, tile_cols)


@pytest.mark.parametrize("mode", MODES)
def test_tiled_score_equals_the_plain_python_oracle(mode):
    rng = np.random.default_rng(950 + MODES.index(mode))
    for _ in range(60):
        scheme, q, t = random_case(rng, 30)
        score, _, query_end, _, target_end, _ = run_oracle(q, t, scheme, mode)
        tiles = int(rng.choice(TILE_SIZES)), int(rng.choice(TILE_SIZES))
        assert score_pair_tiled(q, t, scheme, mode, *tiles, threads=2) == \
            PairScore(score, query_end, target_end)


@pytest.mark.parametrize("mode", MODES)
def test_tiled_score_on_tie_heavy_repeats_and_edge_shapes(mode):
    # Repeats make many cells share the maximum, so the end cell rests on the tie rule;
    # tiles as tall or wide as the matrix give one tile row or one tile column.
    dna = ScoringScheme.dna()
    protein = ScoringScheme.from_matrix("BLOSUM62")
    texts = [(dna, "AC" * 60, "CA" * 97 + "C"), (dna, "A" * 150, "A" * 73),
             (dna, "ACG" * 9, "ACG" * 41), (dna, "", "ACGT"), (dna, "ACGT", ""), (dna, "", ""),
             (dna, "T", "A" * 40), (dna, "A" * 40, "T"), (protein, "WY" * 50, "YW" * 31),
             (protein, "KKKKKKKK" * 9, "K" * 200)]
    for scheme, q_text, t_text in texts:
        q, t = scheme.alphabet.encode(q_text), scheme.alphabet.encode(t_text)
        expected = score_pair(q, t, scheme, mode, threads=1)
        for tile_rows, tile_cols in [(1, 1), (2, 3), (7, 16), (len(q) + 1, 1), (1, len(t) + 1),
                                     (len(q) + 5, 3), (3, len(t) + 5), (400, 400)]:
            assert score_pair_tiled(q, t, scheme, mode, tile_rows, tile_cols, threads=2) == \
                expected, (q_text, t_text, tile_rows, tile_cols)


@pytest.mark.parametrize("scheme_index", [0, 2, 4, 6])
def test_tiled_block_pruning_skips_tiles_and_keeps_the_end_cell(scheme_index):
    # The query copies the target's first 600 residues and goes on unrelated for 100: once the
    # copy's tiles are scored, a tile below it can gain at most one best substitution per
    # remaining row, too little, so the waves after it must skip such tiles.
    scheme = SCHEMES[scheme_index]
    rng = np.random.default_rng(1200 + scheme_index)
    letters = 4 if scheme.is_dna else 20
    target = rng.integers(0, letters, 3000, dtype=np.uint8)
    query = np.concatenate([target[:600], rng.integers(0, letters, 100, dtype=np.uint8)])
    profile: dict = {}
    got = score_pair_tiled(query, target, scheme, "local", 64, 64, threads=2, profile=profile)
    assert profile["pruned_cells"] > (0.2 if scheme.is_dna else 0.05) * len(query) * len(target)
    assert got == score_pair_tiled(query, target, scheme, "local", 64, 64, threads=2, prune=False) == \
        score_pair(query, target, scheme, "local", threads=1)


def test_tiled_block_pruning_with_ties_and_mutated_copies_equals_the_row_kernel():
    rng = np.random.default_rng(1300)
    for case in range(200):
        scheme = SCHEMES[case % len(SCHEMES)]
        target = scheme.alphabet.encode(random_text(rng, scheme, int(rng.integers(50, 400)),
                                                    tie_heavy=case % 2 == 0))
        start = int(rng.integers(0, len(target) // 2))
        piece = scheme.alphabet.decode(target[start:start + int(rng.integers(10, 200))])
        query = scheme.alphabet.encode(random_text(rng, scheme, int(rng.integers(0, 20))) +
                                       related_text(rng, scheme, piece, 0.05 * (case % 3)) +
                                       random_text(rng, scheme, int(rng.integers(0, 40))))
        tiles = int(rng.choice(TILE_SIZES)), int(rng.choice(TILE_SIZES))
        assert score_pair_tiled(query, target, scheme, "local", *tiles, threads=2) == \
            score_pair(query, target, scheme, "local", threads=1), (case, tiles)


def test_long_pairs_take_the_tiled_path_with_the_same_result(monkeypatch):
    # Two threads are too few for the tiled kernel to beat the striped one; let global and
    # semiglobal pairs tile.
    assert pairwise.tile_shape(8200, 8200, 2) is None
    monkeypatch.setattr(pairwise, "TILED_MIN_THREADS", 2)
    calls = []
    tiled = pairwise._score_tiled
    monkeypatch.setattr(pairwise, "_score_tiled",
                        lambda *args: calls.append(args[5:8]) or tiled(*args))
    rng = np.random.default_rng(990)
    scheme = ScoringScheme.dna()
    target = rng.integers(0, 4, 8200, dtype=np.uint8)
    query = target[150:].copy()
    query[rng.integers(0, len(query), 800)] = rng.integers(0, 4, 800, dtype=np.uint8)
    for mode in MODES:
        single = score_pair(query, target, scheme, mode, threads=1)
        assert score_pair(query, target, scheme, mode, threads=2) == single
        # align_pair's end-cell pass tiles too; the traceback then follows the same path.
        alignment = align_pair(query, target, scheme, mode, threads=2)
        assert alignment == align_pair(query, target, scheme, mode)
        assert (alignment.score, alignment.query_end, alignment.target_end) == \
            (single.score, single.query_end, single.target_end)
    # Two tiled calls per mode with tiles of about 8 per thread along each side; local pairs
    # run their striped bands on the threads instead (test_striped.py checks those).
    assert striped.runs_in_bands(len(query), len(target), 2)
    assert calls == [(504, 513, 2)] * 4


def test_tiled_arguments_are_checked():
    scheme = ScoringScheme.dna()
    codes = scheme.alphabet.encode("ACGT")
    with pytest.raises(ValueError, match="tiles"):
        score_pair_tiled(codes, codes, scheme, "local", 0, 4)
    with pytest.raises(ValueError, match="threads"):
        score_pair(codes, codes, scheme, "local", threads=0)
    with pytest.raises(ValueError, match="mode"):
        score_pair_tiled(codes, codes, scheme, "glocal", 2, 2)


@pytest.mark.parametrize("mode", MODES)
def test_progress_inside_one_pair_reports_every_pass_and_changes_nothing(mode):
    """A budget that cuts the traceback into bands: the callback gets the end-cell pass, each
    forward checkpoint segment and each band, in order, and the alignment is the same."""
    scheme = ScoringScheme.dna()
    rng = np.random.default_rng(16)
    text = random_text(rng, scheme, 300)
    q = scheme.alphabet.encode(text)
    t = scheme.alphabet.encode(related_text(rng, scheme, text))
    budget = len(q) * (len(t) + 1) // 6
    reports = []
    result = align_pair(q, t, scheme, mode, memory_budget=budget, progress=reports.append)
    assert result == align_pair(q, t, scheme, mode, memory_budget=budget)
    assert result == align_pair(q, t, scheme, mode)
    assert reports[0] == len(q) * len(t) and len(reports) >= 8 and min(reports) > 0
    area = result.query_end * (result.target_end + 1)
    # The bands hold the path's rows over at most its end column; the forward pass as many again.
    assert len(q) * len(t) + area // 2 < sum(reports) <= pairwise.align_cells(len(q), len(t), budget)
