"""Alphabets, sequence encoding, substitution matrices and the affine gap model.

Conventions
-----------
* Sequences are encoded to ``uint8`` codes: the index of each letter in the
  scoring scheme's alphabet. Upper and lower case encode alike; the original
  text (soft-masking included) is kept on :class:`Sequence` for output.
* A gap of length ``k`` costs ``gap_open + k * gap_extend`` (the Gotoh / BLAST
  convention): a one-base gap costs ``open + extend``.
* All scores are integers. Engines use 32-bit integers;
  :meth:`ScoringScheme.check_score_range` refuses inputs whose scores could
  overflow them.

DNA alphabet: ``ACGT`` (codes 0-3) followed by the IUPAC ambiguity codes
``RYSWKMBDHVN`` (codes 4-14); ``U`` is read as ``T``. A pair involving an
ambiguity code scores ``ambiguity`` (default -1).

Protein alphabet: the 20 amino acids, ``B Z X``, ``U`` (selenocysteine), ``O``
(pyrrolysine), ``*`` (stop) and ``J`` (leucine or isoleucine). Matrices come from
``Bio.Align.substitution_matrices``; a letter the matrix lacks is scored with the
matrix's ``X`` row and column, except ``U``, scored as ``C`` (as blastp and ssearch36 do),
``O``, scored as ``K`` (as ssearch36 does; blastp scores it as its own ``X``), and ``J``, scored
as the better of ``I`` and ``L`` (as ssearch36 does). Biopython's ``BLASTP`` matrix is blastp's
BLOSUM62 as the program holds it, rows for ``B Z X U O J`` included: with it scores are blastp's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpualign_plugin.errors import InputError

DNA_LETTERS = "ACGTRYSWKMBDHVN"
"""DNA alphabet in code order: ACGT (0-3), then the IUPAC ambiguity codes."""

DNA_COMPLEMENT = "TGCAYRSWMKVHDBN"
"""Complement of each letter of :data:`DNA_LETTERS`, position by position."""

PROTEIN_LETTERS = "ARNDCQEGHILKMFPSTWYVBZXUO*J"
"""Protein alphabet in code order (NCBI matrix order, then U, O, ``*`` and J)."""

STANDS_FOR = {"U": "C", "O": "K", "J": "IL"}
"""Letters of the protein alphabet scored, where a matrix has no row for them, as the best of these
letters (ssearch36's rule: selenocysteine as cysteine, pyrrolysine as lysine, J as I or L)."""

NEG_INF = -(1 << 30)
"""The engines' minus infinity for impossible states; far from int32 overflow when decremented."""

LOCAL, GLOBAL, SEMIGLOBAL = 0, 1, 2
"""Alignment mode codes, as every kernel (CPU and GPU) takes them."""
MODE_CODES = {"local": LOCAL, "global": GLOBAL, "semiglobal": SEMIGLOBAL}
"""The kernels' code of each mode, by the mode's name. Here, not in the Numba module
:mod:`gpualign_plugin.gotoh`, so that GPU paths name modes without importing Numba."""

NUCLEOTIDE_LIKE = frozenset("ACGTUN")
"""Letters :func:`looks_like_nucleotide` counts (either case)."""


def named_character(char: str) -> str:
    """How an error names a character of a file read as Latin-1: ``character 'Z'``, or, past
    ASCII (one byte of a UTF-8 letter, say) and for control characters, ``byte 0xc3``."""
    return f"character {char!r}" if char.isascii() and char.isprintable() else f"byte 0x{ord(char):02x}"


@dataclass(frozen=True)
class Alphabet:
    """An ordered set of letters and its encoding table.

    Attributes
    ----------
    name : str
        ``'dna'`` or ``'protein'``.
    letters : str
        Upper-case letters; a letter's code is its index.
    """

    name: str
    letters: str
    _table: np.ndarray = field(repr=False, compare=False)

    @classmethod
    def create(cls, name: str, letters: str, aliases: dict[str, str] | None = None) -> "Alphabet":
        """Build an alphabet; ``aliases`` maps extra letters to letters of the alphabet."""
        table = np.full(256, 255, dtype=np.uint8)
        for code, letter in enumerate(letters):
            table[ord(letter)] = code
            table[ord(letter.lower())] = code
        for alias, letter in (aliases or {}).items():
            table[ord(alias)] = table[ord(letter)]
            table[ord(alias.lower())] = table[ord(letter)]
        return cls(name, letters, table)

    @property
    def size(self) -> int:
        """Number of codes."""
        return len(self.letters)

    def encode(self, text: str, path: str | None = None, record: str | None = None) -> np.ndarray:
        """Encode ``text`` to ``uint8`` codes.

        Raises
        ------
        InputError
            At the first character outside the alphabet, naming ``path``, ``record``
            and the 1-based position; for a DNA alphabet given protein, the message says
            so. (Nucleotides given to the protein alphabet are valid letters: the FASTA
            readers judge a whole file, :func:`gpualign_plugin.io.fasta.read_fasta`.)
        """
        raw = np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)
        codes = self.lookup(raw)
        bad = np.flatnonzero(codes == 255)
        if bad.size:
            pos = int(bad[0])
            char = text[pos]
            hint = ""
            if (self.name == "dna" and char.upper() in PROTEIN_LETTERS
                    and not looks_like_nucleotide(text)):
                hint = " (the sequence looks like protein but the scoring scheme is for DNA)"
            raise InputError(f"{named_character(char)} is not in the {self.name} alphabet{hint}",
                             path=path, record=record, position=pos + 1)
        return codes

    def lookup(self, raw: np.ndarray) -> np.ndarray:
        """Codes of the ``uint8`` character bytes ``raw``, 255 for a character outside the alphabet."""
        return self._table[raw]

    def decode(self, codes: np.ndarray) -> str:
        """Upper-case text of ``codes``."""
        lookup = np.frombuffer(self.letters.encode("ascii"), dtype=np.uint8)
        return lookup[np.asarray(codes, dtype=np.intp)].tobytes().decode("ascii")


def looks_like_nucleotide(text: str) -> bool:
    """True when at least 10 letters are given and 90% or more are A, C, G, T, U or N."""
    letters = [c for c in text.upper() if c.isalpha()]
    if len(letters) < 10:
        return False
    nucleotide = sum(1 for c in letters if c in NUCLEOTIDE_LIKE)
    return nucleotide >= 0.9 * len(letters)


DNA = Alphabet.create("dna", DNA_LETTERS, aliases={"U": "T"})
PROTEIN = Alphabet.create("protein", PROTEIN_LETTERS)

_DNA_COMPLEMENT_CODES = np.array([DNA_LETTERS.index(c) for c in DNA_COMPLEMENT], dtype=np.uint8)
_TEXT_COMPLEMENT = str.maketrans(DNA_LETTERS + DNA_LETTERS.lower() + "Uu",
                                 DNA_COMPLEMENT + DNA_COMPLEMENT.lower() + "Aa")


def reverse_complement_codes(codes: np.ndarray) -> np.ndarray:
    """Reverse complement of DNA codes (IUPAC codes complemented too)."""
    return _DNA_COMPLEMENT_CODES[codes[::-1]]


def reverse_complement_text(text: str) -> str:
    """Reverse complement of DNA text, keeping each letter's case."""
    return text.translate(_TEXT_COMPLEMENT)[::-1]


@dataclass(frozen=True)
class Sequence:
    """One sequence record.

    Attributes
    ----------
    id : str
        Record id (first word of the FASTA header).
    text : str
        The residues as read, case kept (lower case = soft-masked).
    codes : numpy.ndarray
        ``uint8`` codes in the scoring scheme's alphabet.
    description : str
        Rest of the FASTA header.
    """

    id: str
    text: str
    codes: np.ndarray = field(repr=False, compare=False)
    description: str = ""

    def __len__(self) -> int:
        return len(self.codes)


BLAST_DEFAULT_GAPS = {"BLOSUM45": (14, 2), "BLOSUM50": (13, 2), "BLOSUM62": (11, 1), "BLOSUM90": (10, 1),
                      "PAM30": (9, 1), "PAM70": (10, 1), "PAM250": (14, 2)}
"""``blastp``'s default (gap open, gap extend) for each matrix it ships, in our convention (a gap
of length ``k`` costs ``open + k * extend``, as BLAST's existence + k * extension). BLOSUM80 is
left out: Biopython's BLOSUM80 is scaled otherwise than NCBI's, so NCBI's 10/1 does not carry
over."""

NCBI_MATRIX_NAMES = {"BLASTP": "BLOSUM62"}
"""The NCBI matrix a Biopython matrix of another name is: its gap defaults and BLAST statistics."""


def ncbi_matrix_name(matrix_name: str) -> str:
    """The upper-case name under which NCBI's tables hold ``matrix_name`` (``BLASTP``: ``BLOSUM62``)."""
    return NCBI_MATRIX_NAMES.get(matrix_name.upper(), matrix_name.upper())


def default_gaps(matrix_name: str) -> tuple[int, int]:
    """``(gap_open, gap_extend)`` to use with a protein ``matrix_name`` when none are given:
    :data:`BLAST_DEFAULT_GAPS` where blastp has a default for it, else BLOSUM62's 11/1."""
    return BLAST_DEFAULT_GAPS.get(ncbi_matrix_name(matrix_name), BLAST_DEFAULT_GAPS["BLOSUM62"])


@dataclass(frozen=True)
class ScoringScheme:
    """Substitution scores and affine gap costs.

    Attributes
    ----------
    alphabet : Alphabet
        DNA or protein.
    matrix : numpy.ndarray
        ``int32`` square matrix indexed by codes, ``alphabet.size`` on a side.
    gap_open, gap_extend : int
        A gap of length ``k`` costs ``gap_open + k * gap_extend`` (both >= 0; extend >= 1).
    name : str
        The matrix name or ``match=..,mismatch=..``; written into output headers.
    """

    alphabet: Alphabet
    matrix: np.ndarray = field(repr=False, compare=False)
    gap_open: int
    gap_extend: int
    name: str

    @classmethod
    def dna(cls, match: int = 2, mismatch: int = -3, gap_open: int = 5, gap_extend: int = 2,
            ambiguity: int = -1) -> "ScoringScheme":
        """Match/mismatch scoring for DNA (defaults: BLASTN's 2/-3, open 5, extend 2)."""
        if match <= 0:
            raise InputError(f"--match must be positive, got {match}")
        if mismatch >= match:
            raise InputError(f"--mismatch ({mismatch}) must be lower than --match ({match})")
        _check_gaps(gap_open, gap_extend)
        size = DNA.size
        matrix = np.full((size, size), ambiguity, dtype=np.int32)
        matrix[:4, :4] = mismatch
        np.fill_diagonal(matrix[:4, :4], match)
        name = f"match={match},mismatch={mismatch},ambiguity={ambiguity}"
        return cls(DNA, matrix, int(gap_open), int(gap_extend), name)

    @classmethod
    def from_matrix(cls, name: str, gap_open: int = 11, gap_extend: int = 1) -> "ScoringScheme":
        """A named matrix from ``Bio.Align.substitution_matrices`` (BLOSUM62, PAM30, NUC.4.4, ...).

        Nucleotide matrices (all letters in the IUPAC DNA set) give a DNA scheme;
        others a protein scheme. Letters of our alphabet that the matrix lacks are
        scored as ``X`` (protein) or ``N`` (DNA), but those of :data:`STANDS_FOR` as the best
        of the letters they stand for, as ssearch36 scores them.
        """
        from Bio.Align import substitution_matrices

        try:
            source = substitution_matrices.load(name.upper() if name.upper() in
                                                substitution_matrices.load() else name)
        except (FileNotFoundError, ValueError, OSError):
            known = ", ".join(substitution_matrices.load())
            raise InputError(f"unknown substitution matrix {name!r} (known: {known})") from None
        _check_gaps(gap_open, gap_extend)
        letters = "".join(source.alphabet).upper()
        alphabet = DNA if set(letters) <= set(DNA_LETTERS + "U") else PROTEIN
        fallback = "X" if alphabet is PROTEIN else "N"
        if fallback not in letters:
            fallback = letters[-1]

        def rows(letter: str) -> str:
            if letter in letters:
                return letter
            stands_for = STANDS_FOR.get(letter, "") if alphabet is PROTEIN else ""
            return stands_for if stands_for and set(stands_for) <= set(letters) else fallback

        size = alphabet.size
        matrix = np.zeros((size, size), dtype=np.int32)
        for a, la in enumerate(alphabet.letters):
            for b, lb in enumerate(alphabet.letters):
                value = max(source[x, y] for x in rows(la) for y in rows(lb))
                if value != int(value):
                    raise InputError(f"matrix {name!r} has non-integer scores; gpualign needs integers")
                matrix[a, b] = int(value)
        return cls(alphabet, matrix, int(gap_open), int(gap_extend), name.upper())

    @property
    def is_dna(self) -> bool:
        """True for the DNA alphabet (both strands can be aligned)."""
        return self.alphabet is DNA

    def match_mismatch(self) -> tuple[int, int, int] | None:
        """``(match, mismatch, ambiguity)`` when the matrix has :meth:`dna`'s form, else None.

        That form: ``match`` between equal codes of A, C, G, T (codes 0-3), ``mismatch``
        between different ones, ``ambiguity`` wherever either code is another IUPAC letter.
        Read from the matrix itself, so a named DNA matrix of that shape qualifies too. The
        CPU batch kernel then computes each cell's score from the two codes instead of
        looking it up.
        """
        if not self.is_dna:
            return None
        bases = self.matrix[:4, :4]
        match, mismatch = int(bases[0, 0]), int(bases[0, 1])
        ambiguity = int(self.matrix[-1, -1])
        expected = np.full(self.matrix.shape, ambiguity)
        expected[:4, :4] = np.where(np.eye(4, dtype=bool), match, mismatch)
        return (match, mismatch, ambiguity) if np.array_equal(self.matrix, expected) else None

    @property
    def fits_int8(self) -> bool:
        """Whether every substitution score is within int8 (-128..127): the GPU long-pair
        engine keeps its query profile in int8."""
        return -128 <= int(self.matrix.min()) and int(self.matrix.max()) <= 127

    def gap_cost(self, length: int) -> int:
        """Cost (a positive number) of one gap of ``length`` columns."""
        return self.gap_open + length * self.gap_extend if length > 0 else 0

    def score_bound(self, query_length: int, target_length: int) -> int:
        """Bound on the absolute value of any DP cell for sequences of these lengths."""
        longest = query_length + target_length
        worst = int(np.abs(self.matrix).max())
        return longest * (worst + self.gap_extend) + 2 * self.gap_open

    def check_score_range(self, query_length: int, target_length: int,
                          names: tuple[str, str] | None = None) -> None:
        """Raise :class:`InputError` if scores could overflow the engines' 32-bit integers.

        ``names`` (query and target record ids), when given, name the pair in the message.
        """
        if self.score_bound(query_length, target_length) >= -NEG_INF // 2:
            what = (f"query '{names[0]}' ({query_length} residues) and target '{names[1]}' "
                    f"({target_length} residues)" if names else
                    f"sequences of {query_length} and {target_length} residues")
            raise InputError(f"{what} could overflow 32-bit scores with this scoring scheme")

    def encode(self, sequence_id: str, text: str, path: str | None = None,
               description: str = "") -> Sequence:
        """Encode one record's text into a :class:`Sequence` (errors name ``path`` and the record)."""
        codes = self.alphabet.encode(text, path=path, record=sequence_id)
        return Sequence(sequence_id, text, codes, description)

    def describe(self) -> str:
        """One-line description: matrix or match/mismatch, and gap costs."""
        return f"{self.name}, gap open {self.gap_open}, gap extend {self.gap_extend}"


def _check_gaps(gap_open: int, gap_extend: int) -> None:
    if int(gap_open) != gap_open or int(gap_extend) != gap_extend:
        raise InputError("gap penalties must be integers")
    if gap_open < 0:
        raise InputError(f"--gap-open must be 0 or more (a cost), got {gap_open}")
    if gap_extend < 1:
        raise InputError(f"--gap-extend must be 1 or more (a cost per gap column), got {gap_extend}")
