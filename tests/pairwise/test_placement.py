"""Placement: primary/secondary choice, order and MAPQ (docs/ALGORITHMS.md, "Placement")."""

from __future__ import annotations

import math
import random

import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpualign_plugin.errors import InputError
from gpualign_plugin.model import Alignment, Cigar
from gpualign_plugin.pairwise.placement import place, place_local, primary_mapq
from gpualign_plugin.scoring import ScoringScheme
from gpualign_plugin.statistics import parameters_for


def make(query: str, target: str, score: int, strand: str = "+") -> Alignment:
    """An alignment whose only relevant fields are ids, strand and score."""
    return Alignment(query, target, 10, 10, 0, 10, 0, 10, strand, score, Cigar.from_string("10="))


def summary(placed):
    return [(a.query_id, a.target_id, a.strand, a.score, a.is_primary, a.mapq) for a in placed]


def test_unique_placement_gets_60():
    placed = place([make("q", "t1", 42)])
    assert summary(placed) == [("q", "t1", "+", 42, True, 60)]


def test_tie_gives_mapq_0_and_plus_strand_wins():
    placed = place([make("q", "t1", 30, "-"), make("q", "t1", 30, "+")])
    assert summary(placed) == [("q", "t1", "+", 30, True, 0), ("q", "t1", "-", 30, False, 0)]


def test_tie_on_same_strand_goes_to_earlier_target_in_file_order():
    alignments = [make("q", "chr2", 30), make("q", "chr1", 30)]
    placed = place(alignments, target_order=["chr1", "chr2"])
    assert summary(placed) == [("q", "chr1", "+", 30, True, 0), ("q", "chr2", "+", 30, False, 0)]
    # Without an explicit order, input order stands for the file order.
    assert [a.target_id for a in place(alignments)] == ["chr2", "chr1"]


def test_default_order_is_per_query_input_order_not_global_first_appearance():
    # Query a only hits chr2, so chr2 appears first overall; b's tie still goes to chr1,
    # which comes first among b's alignments (the caller lists them in target-file order).
    alignments = [make("a", "chr2", 9), make("b", "chr1", 30), make("b", "chr2", 30)]
    assert summary(place(alignments)) == [("a", "chr2", "+", 9, True, 60),
                                          ("b", "chr1", "+", 30, True, 0),
                                          ("b", "chr2", "+", 30, False, 0)]


def test_close_second_lowers_mapq_by_the_formula():
    placed = place([make("q", "t2", 90), make("q", "t1", 100)])
    # floor(60 * (100 - 90) / 100) = 6
    assert summary(placed) == [("q", "t1", "+", 100, True, 6), ("q", "t2", "+", 90, False, 0)]


def test_distant_second_is_capped_at_60():
    # A negative second (possible in global mode) would give more than 60 unclamped.
    placed = place([make("q", "t1", 50), make("q", "t2", -20)])
    assert [a.mapq for a in placed] == [60, 0]


def test_score_order_beats_strand_and_target_order():
    alignments = [make("q", "t1", 10, "+"), make("q", "t2", 20, "-"), make("q", "t1", 15, "-"),
                  make("q", "t2", 15, "+")]
    placed = place(alignments, target_order=["t1", "t2"])
    assert summary(placed) == [
        ("q", "t2", "-", 20, True, 15),  # floor(60 * 5 / 20)
        ("q", "t1", "-", 15, False, 0),  # target order before strand among equal scores
        ("q", "t2", "+", 15, False, 0),
        ("q", "t1", "+", 10, False, 0),
    ]


def test_queries_keep_order_of_first_appearance_and_are_placed_independently():
    alignments = [make("b", "t1", 5), make("a", "t1", 7), make("b", "t2", 9), make("a", "t2", 7)]
    placed = place(alignments)
    assert summary(placed) == [
        ("b", "t2", "+", 9, True, 26),  # floor(60 * 4 / 9)
        ("b", "t1", "+", 5, False, 0),
        ("a", "t1", "+", 7, True, 0),
        ("a", "t2", "+", 7, False, 0),
    ]


def test_non_positive_best_score_gets_mapq_0():
    assert primary_mapq(0, None) == 0
    assert primary_mapq(-5, -9) == 0
    assert summary(place([make("q", "t", -3)])) == [("q", "t", "+", -3, True, 0)]


def test_inputs_are_not_modified_and_other_fields_are_kept():
    original = make("q", "t1", 8)
    placed = place([original, make("q", "t2", 9)])
    assert original.is_primary and original.mapq == 60
    assert placed[1].cigar == original.cigar and placed[1].target_id == "t1"


def test_unknown_target_in_explicit_order_is_refused():
    with pytest.raises(ValueError, match="'t9'"):
        place([make("q", "t9", 5)], target_order=["t1"])


def test_empty_input_gives_empty_output():
    assert place([]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["t1", "t2", "t3"]),
                          st.sampled_from("+-"), st.integers(-50, 200)), max_size=12))
def test_placement_matches_a_plain_restatement_of_the_rule(rows):
    alignments = [make(q, t, s, strand) for q, t, strand, s in rows]
    placed = place(alignments, target_order=["t1", "t2", "t3"])
    assert len(placed) == len(alignments)
    queries = list(dict.fromkeys(q for q, _, _, _ in rows))
    expected = []
    for query in queries:
        mine = [(i, a) for i, a in enumerate(alignments) if a.query_id == query]
        mine.sort(key=lambda p: (-p[1].score, int(p[1].target_id[1]),
                                 0 if p[1].strand == "+" else 1, p[0]))
        best = mine[0][1].score
        second = mine[1][1].score if len(mine) > 1 else 0
        if best <= 0 or (len(mine) > 1 and second == best):
            mapq = 0
        else:
            mapq = min(60, math.floor(60 * (best - second) / best))
        for rank, (_, a) in enumerate(mine):
            expected.append((a.query_id, a.target_id, a.strand, a.score, rank == 0,
                             mapq if rank == 0 else 0))
    assert summary(placed) == expected
    assert all(0 <= a.mapq <= 60 for a in placed)


# ---- local placement (place_local), docs/ALGORITHMS.md "Local placement" ----

def _random_dna(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def _mutate(rng, text, rate):
    out = []
    for c in text:
        r = rng.random()
        if r < rate:
            out.append(rng.choice("ACGT".replace(c, "")))
        elif r < rate * 1.2:
            continue  # a deletion
        elif r < rate * 1.4:
            out.append(c + rng.choice("ACGT"))  # an insertion
        else:
            out.append(c)
    return "".join(out)


def _rc(text):
    return text.translate(str.maketrans("ACGT", "TGCA"))[::-1]


def placement_case(seed):
    """Two targets (one with a repeat), queries of several pieces on both strands, and an
    unrelated query."""
    rng = random.Random(seed)
    t1 = _random_dna(rng, 420)
    repeat = t1[100:160]
    t2 = _random_dna(rng, 150) + repeat + _random_dna(rng, 120)
    targets = [("chrA", t1), ("chrB", t2)]
    queries = []
    for k in range(3):
        parts = []
        for _ in range(rng.randint(1, 3)):
            source = rng.choice([t1, t2])
            start = rng.randrange(0, len(source) - 80)
            piece = _mutate(rng, source[start:start + rng.randint(40, 80)], 0.04)
            parts.append(_rc(piece) if rng.random() < 0.5 else piece)
            if rng.random() < 0.5:
                parts.append(_random_dna(rng, rng.randint(5, 30)))
        queries.append((f"q{k}", "".join(parts)))
    # Two neighbouring pieces with 25 residues inserted between them: one alignment bridges
    # them with a gap unless the Z-drop cuts it.
    start = rng.randrange(0, 300)
    queries.append(("bridge", t1[start:start + 50] + _random_dna(rng, 25) + t1[start + 50:start + 100]))
    queries.append(("unrelated", _random_dna(rng, 120)))
    queries.append(("repeat", _mutate(rng, repeat, 0.02)))
    return queries, targets


def _records(placed):
    return [(a.query_id, a.target_id, a.query_start, a.query_end, a.target_start, a.target_end,
             a.strand, a.score, str(a.cigar), a.is_primary, a.is_supplementary, a.mapq)
            for a in placed]


SCHEME = ScoringScheme.dna()
PARAMETERS = parameters_for(SCHEME)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("zdrop_bits", [12.0, math.inf])
def test_local_placement_equals_the_oracle_record_for_record(seed, zdrop_bits):
    queries, targets = placement_case(seed)
    encoded_q = [SCHEME.encode(name, text) for name, text in queries]
    encoded_t = [SCHEME.encode(name, text) for name, text in targets]
    placed = place_local(encoded_q, encoded_t, SCHEME, backend="cpu", zdrop_bits=zdrop_bits)
    zdrop = zdrop_bits * math.log(2) / PARAMETERS.lam
    expected = oracles.local_placement(queries, targets, SCHEME, PARAMETERS, 1e-5, zdrop)
    assert _records(placed) == expected
    by_id = {s.id: s for s in encoded_q + encoded_t}
    for a in placed:
        assert a.recompute_score(by_id[a.query_id].codes, by_id[a.target_id].codes, SCHEME) == a.score
        assert a.evalue == PARAMETERS.evalue(a.score, a.query_length, 750, 2) <= 1e-5
        assert a.bit_score == PARAMETERS.bit_score(a.score)
    assert "unrelated" not in {a.query_id for a in placed}


def test_pieces_of_a_rearranged_query_are_found_on_both_strands():
    queries, targets = placement_case(3)
    rng = random.Random(7)
    t1 = targets[0][1]
    # Forward piece, inverted piece, forward piece further left: a rearranged contig.
    text = t1[200:290] + _rc(t1[330:400]) + _random_dna(rng, 10) + t1[10:90]
    placed = place_local([SCHEME.encode("contig", text)], [SCHEME.encode(*t) for t in targets],
                         SCHEME, backend="cpu")
    pieces = sorted((a.query_start, a.query_end, a.target_start, a.target_end, a.strand)
                    for a in placed if a.is_primary)
    assert [p[4] for p in pieces] == ["+", "-", "+"]
    assert [(p[2], p[3]) for p in pieces] == [(200, 290), (330, 400), (10, 90)]
    assert [a.is_supplementary for a in placed] == [False, True, True]
    assert [a.mapq for a in placed] == [60, 60, 60]


def test_a_query_on_a_repeat_gets_mapq_0_and_a_secondary():
    queries, targets = placement_case(0)
    t1 = targets[0][1]
    placed = place_local([SCHEME.encode("copy", t1[100:160])], [SCHEME.encode(*t) for t in targets],
                         SCHEME, backend="cpu")
    assert [(a.target_id, a.is_primary, a.mapq) for a in placed] == [("chrA", True, 0),
                                                                     ("chrB", False, 0)]


def test_local_placement_refuses_a_bad_evalue():
    with pytest.raises(InputError, match="--evalue"):
        place_local([], [], SCHEME, backend="cpu", evalue=0)


def test_progress_moves_inside_one_query_and_changes_nothing():
    """The CPU engine reports every score pass and each alignment's passes as they are done:
    several reports while ONE query is placed, more cells than its first score pass (always
    whole; later passes are pruned, so their swept cells can be fewer than on_cells counts)."""
    queries, targets = placement_case(3)
    encoded_t = [SCHEME.encode(*t) for t in targets]
    query = [SCHEME.encode(*queries[0])]
    per_query, inside = [], []
    placed = place_local(query, encoded_t, SCHEME, backend="cpu", on_cells=per_query.append,
                         on_progress=inside.append)
    assert placed == place_local(query, encoded_t, SCHEME, backend="cpu")
    assert len(per_query) == 1 and len(inside) > 4 and min(inside) > 0
    first_pass = len(query[0]) * sum(len(t) for t in encoded_t) * 2
    assert sum(inside) > first_pass and per_query[0] >= first_pass


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.sampled_from("=XID")), max_size=12), st.randoms())
def test_column_scores_equal_the_oracle_on_random_paths(runs, rng):
    """The columns' scores that z-drop cuts on (vectorised) against the oracle's plain walk."""
    import numpy as np

    from gpualign_plugin.model import column_scores

    scheme = ScoringScheme.dna()
    cigar = Cigar.from_runs(runs)
    ops = "".join(op * length for length, op in cigar.runs)
    query = np.array([rng.randrange(4) for op in ops if op != "D"], dtype=np.uint8)
    target = np.array([rng.randrange(4) for op in ops if op != "I"], dtype=np.uint8)
    expected = oracles._column_scores(str(cigar) if ops else "", query, target, scheme.matrix,
                                      scheme.gap_open, scheme.gap_extend)
    assert list(column_scores(cigar, query, target, scheme)) == list(expected)
