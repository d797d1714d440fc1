"""The report's SNP and indel rows add up to their totals, ambiguity codes included."""

from __future__ import annotations

from types import SimpleNamespace

from gpualign_plugin.compare.report import _snp_lines


def _variant(kind, ref, alt, buffer=30):
    return SimpleNamespace(kind=kind, ref=ref, alt=alt, buffer=buffer, target_id="ref", target_pos=0,
                           query_id="asm", query_pos=0)


def _rows(lines):
    rows = {}
    for line in lines:
        words = line.split()
        if len(words) == 3:
            rows.setdefault(words[0], (words[1], words[2]))
    return rows


def test_snps_and_indels_with_ambiguity_codes_have_rows_that_sum_to_the_total():
    # An assembly base R (A or G) against reference A, N against C, and an inserted N:
    # dnadiff prints such pairs as rows of their own (e.g. 'TM'); none may vanish.
    variants = [_variant("snp", "A", "C"), _variant("snp", "A", "r"), _variant("snp", "C", "N"),
                _variant("insertion", "", "NN"), _variant("deletion", "G", "")]
    rows = _rows(_snp_lines(SimpleNamespace(variants=variants, blocks=[])))
    assert rows["TotalSNPs"] == ("3", "3")
    assert rows["AR"] == ("1(33.33%)", "0(0.00%)") and rows["RA"] == ("0(0.00%)", "1(33.33%)")
    assert rows["CN"][0] == "1(33.33%)" and rows["NC"][1] == "1(33.33%)"
    assert rows["TotalIndels"] == ("3", "3")
    assert rows[".N"] == ("2(66.67%)", "0(0.00%)") and rows["N."] == ("0(0.00%)", "2(66.67%)")
    # Only the TotalSNPs block (first 'AC' .. last SNP row) counts toward its total.
    lines = _snp_lines(SimpleNamespace(variants=variants, blocks=[]))
    snp_block = lines[1:lines.index("")]
    assert sum(int(line.split()[1].split("(")[0]) for line in snp_block) == 3


def test_values_stay_in_dnadiffs_columns_whatever_the_label_length():
    from gpualign_plugin.compare.report import _row

    for label in ("TotalSNPs", "1-to-1", "RelocationEvents", "TranslocationEvents", "TranslocationBases"):
        line = _row(label, 12, 34)
        assert line.startswith(label) and line[34:36] == "12" and line.endswith(" 34") and len(line) == 57
