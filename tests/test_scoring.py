"""Scoring model: alphabets, encoding, matrices, gap convention and their errors."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from Bio import SeqIO
from paths import DATA

from gpualign_plugin.errors import InputError
from gpualign_plugin.scoring import (BLAST_DEFAULT_GAPS, DNA, NEG_INF, PROTEIN, ScoringScheme, default_gaps,
                                     reverse_complement_codes, reverse_complement_text)


def test_dna_encoding_is_case_insensitive_and_reads_u_as_t():
    assert list(DNA.encode("ACGTacgtUu")) == [0, 1, 2, 3, 0, 1, 2, 3, 3, 3]


def test_every_iupac_code_is_accepted_and_scored_with_the_ambiguity_score():
    scheme = ScoringScheme.dna(match=2, mismatch=-3, ambiguity=-7)
    codes = DNA.encode("RYSWKMBDHVN")
    assert (codes >= 4).all()
    assert (scheme.matrix[codes][:, :4] == -7).all()
    assert scheme.matrix[0, 0] == 2 and scheme.matrix[0, 1] == -3


def test_reverse_complement_of_codes_and_text_agree():
    text = "ACGTRYKMBVDHNSWacgt"
    rc_text = reverse_complement_text(text)
    assert rc_text == "acgtWSNDHBVKMRYACGT"
    assert DNA.decode(reverse_complement_codes(DNA.encode(text))) == rc_text.upper()


def test_reverse_complement_is_an_involution():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, DNA.size, 500).astype(np.uint8)
    assert np.array_equal(reverse_complement_codes(reverse_complement_codes(codes)), codes)


def test_protein_alphabet_holds_the_twenty_amino_acids_and_bzxuoj_stop():
    assert set("ACDEFGHIKLMNPQRSTVWY") | set("BZXUOJ*") == set(PROTEIN.letters)
    assert PROTEIN.letters.index("*") == 25  # codes of prepared databases written before J came


def test_j_scores_as_the_better_of_i_and_l_as_in_ssearch36(tmp_path):
    """No Biopython BLOSUM has a J (leucine or isoleucine) row; ssearch36 scores J against each
    letter as the better of I and L (measured on every letter: J/R -2 as L, J/V 3 as I, J/J 4),
    and so do we. blastp's own J row (J/I 3) is Biopython's ``BLASTP`` matrix."""
    from gpualign_plugin.pairwise.api import align_sequences

    blosum = ScoringScheme.from_matrix("BLOSUM62")
    j, i, l = (PROTEIN.letters.index(letter) for letter in "JIL")
    assert (blosum.matrix[j] == np.maximum(blosum.matrix[i], blosum.matrix[l])).all()
    assert (blosum.matrix[:, j] == blosum.matrix[j]).all() and blosum.matrix[j, j] == 4
    assert [blosum.matrix[j, PROTEIN.letters.index(x)] for x in "RVMD"] == [-2, 3, 2, -3]
    blastp = ScoringScheme.from_matrix("BLASTP")
    assert blastp.matrix[j, i] == blastp.matrix[j, l] == blastp.matrix[j, j] == 3
    if shutil.which("ssearch36") is None:
        return
    base = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ"
    for letter in "RVMDJ":
        query, subject = base[:20] + "J" + base[21:], base[:20] + letter + base[21:]
        (tmp_path / "q.fa").write_text(f">q\n{query}\n")
        (tmp_path / "s.fa").write_text(f">s\n{subject}\n")
        report = subprocess.run(["ssearch36", "-q", "-s", "BL62", "-f", "-11", "-g", "-1", str(tmp_path / "q.fa"),
                                 str(tmp_path / "s.fa")], check=True, capture_output=True, text=True).stdout
        ours = align_sequences(blosum.encode("q", query), blosum.encode("s", subject), blosum, "local").score
        assert int(re.search(r"Smith-Waterman score: (\d+)", report).group(1)) == ours, letter


def test_named_matrix_matches_biopython_and_scores_o_as_k():
    from Bio.Align import substitution_matrices

    blosum = substitution_matrices.load("BLOSUM62")
    scheme = ScoringScheme.from_matrix("blosum62", 11, 1)
    letters = PROTEIN.letters
    for a in "ARNDCQEGHILKMFPSTWYVBZX*":
        for b in "ARNDCQEGHILKMFPSTWYV":
            assert scheme.matrix[letters.index(a), letters.index(b)] == blosum[a, b]
    o, k = letters.index("O"), letters.index("K")
    assert np.array_equal(scheme.matrix[o], scheme.matrix[k])


@pytest.mark.parametrize("name", ["BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "PAM30", "PAM70", "PAM250"])
def test_standard_protein_matrices_load(name):
    scheme = ScoringScheme.from_matrix(name)
    assert scheme.alphabet is PROTEIN and scheme.matrix.dtype == np.int32


def test_nucleotide_matrix_gives_a_dna_scheme():
    assert ScoringScheme.from_matrix("NUC.4.4", 5, 2).is_dna


def test_gap_of_length_k_costs_open_plus_k_extend():
    scheme = ScoringScheme.dna(gap_open=5, gap_extend=2)
    assert [scheme.gap_cost(k) for k in range(4)] == [0, 7, 9, 11]


@pytest.mark.parametrize("kwargs, words", [
    ({"gap_open": -1}, "--gap-open"),
    ({"gap_extend": 0}, "--gap-extend"),
    ({"match": 0}, "--match"),
    ({"match": 1, "mismatch": 2}, "--mismatch"),
])
def test_senseless_scoring_parameters_are_refused(kwargs, words):
    with pytest.raises(InputError, match=words):
        ScoringScheme.dna(**kwargs)


def test_unknown_matrix_is_refused_with_the_known_names():
    with pytest.raises(InputError, match="BLOSUM62"):
        ScoringScheme.from_matrix("BLOSUM63")


def test_protein_given_to_a_dna_scheme_names_record_and_position():
    with pytest.raises(InputError) as err:
        ScoringScheme.dna().encode("chr1", "ACGTQ", path="x.fa")
    assert str(err.value).startswith("x.fa: record 'chr1': position 5:")
    assert "protein" in str(err.value)


def test_a_nucleotide_file_given_to_a_protein_scheme_is_refused_but_a_glycine_rich_protein_is_read(tmp_path):
    # The file is judged as a whole: a DNA file given by mistake is refused by both readers with
    # the same line; one Gly/Ala-rich protein (all its letters A, C, G, T) among others is read.
    from gpualign_plugin.io.fasta import read_fasta, read_fasta_arrays

    protein = ScoringScheme.from_matrix("BLOSUM62")
    dna = tmp_path / "dna.fa"
    dna.write_text(">r1\nACGTTGCAACGTAGCT\n>r2\nACGTNACGTM\n")
    mixed = tmp_path / "proteins.fa"
    mixed.write_text(">grp\nGGAGGGAGGGTGGGAGGAGGCGG\n>kin\nMKVLAAGIVGLLLAWKKWHEFYQRS\n")
    messages = set()
    for read in (lambda path: read_fasta(path, protein), lambda path: read_fasta_arrays(path, PROTEIN)):
        with pytest.raises(InputError, match="look like nucleotides") as err:
            read(dna)
        assert str(err.value).startswith(f"{dna}: record 'r1':")
        messages.add(str(err.value))
        records = read(mixed)
        assert len(getattr(records, "names", records)) == 2
    assert len(messages) == 1
    assert len(protein.encode("r", "ACGTTGCAACGTAGCT").codes) == 16  # one sequence: valid letters


def test_score_range_check_refuses_overflowing_sizes():
    scheme = ScoringScheme.dna()
    scheme.check_score_range(10**6, 10**6)
    with pytest.raises(InputError, match="overflow"):
        scheme.check_score_range(10**8, 10**8)
    assert scheme.score_bound(10**6, 10**6) < -NEG_INF // 2


def test_selenocysteine_scores_as_cysteine_and_pyrrolysine_as_lysine_as_in_ssearch36(tmp_path):
    """BLOSUM62 has no U and no O: blastp and ssearch36 score U as C; ssearch36 scores O as K
    (blastp as its own X row, which differs from Biopython's and ssearch36's in 20 entries, so
    no choice equals both). Ten O against HBB_HUMAN in HBA_HUMAN: ssearch36 260 (as with K)."""
    from gpualign_plugin.pairwise.api import align_sequences

    blosum = ScoringScheme.from_matrix("BLOSUM62")
    u, c, o, k = (PROTEIN.letters.index(letter) for letter in "UCOK")
    assert (blosum.matrix[u] == blosum.matrix[c]).all() and (blosum.matrix[:, u] == blosum.matrix[:, c]).all()
    assert blosum.matrix[u, u] == blosum.matrix[c, c] == 9
    assert (blosum.matrix[o] == blosum.matrix[k]).all() and (blosum.matrix[:, o] == blosum.matrix[:, k]).all()
    records = {r.id: str(r.seq) for r in SeqIO.parse(os.path.join(DATA, "globins.fasta"), "fasta")}
    hbb, hba = records["HBB_HUMAN"], list(records["HBA_HUMAN"])
    for position in (5, 20, 33, 47, 60, 77, 90, 101, 118, 130):
        hba[position] = "O"
    hba = "".join(hba)
    ours = align_sequences(blosum.encode("q", hbb), blosum.encode("s", hba), blosum, "local").score
    assert ours == 260
    if shutil.which("ssearch36") is not None:
        (tmp_path / "q.fa").write_text(f">q\n{hbb}\n")
        (tmp_path / "s.fa").write_text(f">s\n{hba}\n")
        report = subprocess.run(["ssearch36", "-q", "-s", "BL62", "-f", "-11", "-g", "-1", str(tmp_path / "q.fa"),
                                 str(tmp_path / "s.fa")], check=True, capture_output=True, text=True).stdout
        assert int(re.search(r"Smith-Waterman score: (\d+)", report).group(1)) == ours
    if shutil.which("blastp") is None:
        return
    query, subject = "MKWHWFYWPRWUWHYMWKFW", "MKWHWFYWPRWCWHYMWKFW"
    (tmp_path / "u.fa").write_text(f">u\n{query}\n")
    (tmp_path / "c.fa").write_text(f">c\n{subject}\n")
    out = subprocess.run(["blastp", "-query", str(tmp_path / "u.fa"), "-subject", str(tmp_path / "c.fa"),
                          "-comp_based_stats", "0", "-seg", "no", "-gapopen", "11", "-gapextend", "1",
                          "-outfmt", "6 score"], check=True, capture_output=True, text=True).stdout
    ours = align_sequences(blosum.encode("q", query), blosum.encode("s", subject), blosum, "local")
    assert ours.score == int(out.split()[0])


@pytest.mark.skipif(not shutil.which("blastp"), reason="ncbi-blast+ is not installed")
def test_default_gaps_of_a_matrix_are_blastps(tmp_path):
    """blastp reports the gap costs it used ("Existence: 14, Extension: 2"): a gap of length k costs
    existence + k * extension there, open + k * extend here."""
    query = tmp_path / "q.fa"
    query.write_text(">q\nMKVLAAGIVGLLLAQSTAWAEEKKEGSA\n")
    for name, gaps in BLAST_DEFAULT_GAPS.items():
        report = subprocess.run(["blastp", "-query", str(query), "-subject", str(query), "-matrix", name],
                                capture_output=True, text=True, check=True).stdout
        found = re.search(r"Existence: (\d+), Extension: (\d+)", report)
        assert (int(found.group(1)), int(found.group(2))) == gaps == default_gaps(name.lower()), name
    assert default_gaps("BLOSUM80") == default_gaps("GONNET1992") == (11, 1)


def test_a_protein_matrix_without_gap_options_takes_blastps_default(tmp_path):
    import argparse

    from gpualign_plugin.cli.common import add_scoring_options, scheme_from_args

    parser = argparse.ArgumentParser()
    add_scoring_options(parser, "protein")
    scheme = scheme_from_args(parser.parse_args(["--matrix", "PAM250"]))
    assert (scheme.gap_open, scheme.gap_extend) == (14, 2)
    scheme = scheme_from_args(parser.parse_args(["--matrix", "PAM250", "--gap-open", "11"]))
    assert (scheme.gap_open, scheme.gap_extend) == (11, 2)
    scheme = scheme_from_args(parser.parse_args([]))
    assert (scheme.name, scheme.gap_open, scheme.gap_extend) == ("BLOSUM62", 11, 1)
    scheme = scheme_from_args(parser.parse_args(["--matrix", "NUC.4.4"]))
    assert (scheme.gap_open, scheme.gap_extend) == (5, 2)


def test_match_mismatch_form_is_read_from_the_matrix():
    assert ScoringScheme.dna().match_mismatch() == (2, -3, -1)
    assert ScoringScheme.dna(1, -1, 0, 1, ambiguity=0).match_mismatch() == (1, -1, 0)
    assert ScoringScheme.from_matrix("BLOSUM62").match_mismatch() is None
    assert ScoringScheme.from_matrix("NUC.4.4").match_mismatch() is None  # IUPAC partial matches
    scheme = ScoringScheme.dna()
    scheme.matrix[4, 14] = -2  # one ambiguity pair scored apart
    assert scheme.match_mismatch() is None
