"""``--pairs`` files as editors and sequencers leave them: a byte-order mark, CRLF."""

from __future__ import annotations

from gpualign_plugin.io.pairs import read_pairs_file


def test_a_byte_order_mark_and_crlf_are_not_part_of_the_first_id(tmp_path):
    # Windows editors save UTF-8 with a BOM: before, the first query id read '\ufeffq1'.
    path = tmp_path / "pairs.txt"
    path.write_bytes("\ufeffq1\tt1\r\nq2 t2\r\n".encode("utf-8"))
    assert read_pairs_file(path, ["q1", "q2"], ["t1", "t2"]) == [("q1", "t1"), ("q2", "t2")]

