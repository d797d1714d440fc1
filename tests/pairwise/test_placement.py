"""Placement: primary/secondary choice, order and MAPQ (docs/ALGORITHMS.md, "Placement")."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpualign_plugin.model import Alignment, Cigar
from gpualign_plugin.pairwise.placement import place, primary_mapq


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
