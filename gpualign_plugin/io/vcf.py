"""VCF output through pysam: sites with one haploid sample, written atomically.

The records are whatever the caller computed (SNPs and indels of a genome comparison);
this module only declares the header and writes them in the order of the reference
records and positions, as VCF requires.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable

import pysam

from gpualign_plugin.io.atomic import atomic_path


_NOT_ACGTN = re.compile("[^ACGTN]")


def vcf_allele(text: str) -> str:
    """``text`` in VCF 4.2's allele alphabet: upper case, every other letter than A, C, G, T
    and N (an IUPAC ambiguity code such as R or Y) written as N."""
    return _NOT_ACGTN.sub("N", text.upper())


@dataclass(frozen=True)
class VcfRecord:
    """One VCF line.

    Attributes
    ----------
    chrom : str
        Reference record.
    start : int
        0-based position of the first base of ``ref`` (VCF ``POS`` is ``start + 1``).
    ref, alt : str
        Alleles (indels anchored on a reference base, as VCF requires).
    info : dict
        INFO values, keys declared in the ``info`` argument of :func:`write_vcf`.
    """

    chrom: str
    start: int
    ref: str
    alt: str
    info: dict = field(default_factory=dict)


def write_vcf(path: str | os.PathLike, records: Iterable[VcfRecord], contigs: list[tuple[str, int]],
              sample: str, info: list[tuple[str, str, str, str]], source: str,
              command_line: str) -> None:
    """Write ``records`` as a VCF 4.2 file with one haploid sample (``GT`` 1 on every line).

    Parameters
    ----------
    path : str or PathLike
        Output; ``.vcf.gz`` is bgzip-compressed (pysam chooses from the name).
    records : iterable of VcfRecord
        Sorted here by contig order, position, REF and ALT. Alleles are written through
        :func:`vcf_allele` (VCF allows only A, C, G, T and N); a record whose alleles are
        then equal (an N against an ambiguity code) is left out.
    contigs : list of (str, int)
        Every reference record and its length, in file order (``##contig`` lines).
    sample : str
        The sample column's name (the compared assembly).
    info : list of (id, number, type, description)
        INFO declarations.
    source, command_line : str
        ``##source`` and ``##gpualignCommand`` header lines.
    """
    header = pysam.VariantHeader()
    header.add_line(f"##source={source}")
    header.add_line(f"##gpualignCommand={' '.join(command_line.split())}")
    for name, length in contigs:
        header.contigs.add(name, length=length)
    for key, number, kind, description in info:
        header.info.add(key, number, kind, description)
    header.formats.add("GT", 1, "String", "Genotype (haploid: 1 = the assembly carries ALT)")
    header.add_sample(sample)
    rank = {name: k for k, (name, _) in enumerate(contigs)}
    ordered = sorted(records, key=lambda r: (rank[r.chrom], r.start, r.ref, r.alt))
    suffix = ".vcf.gz" if os.fspath(path).endswith(".gz") else ".vcf"
    with atomic_path(path, suffix=suffix) as tmp:
        with pysam.VariantFile(tmp, "wz" if suffix == ".vcf.gz" else "w", header=header) as out:
            for record in ordered:
                alleles = (vcf_allele(record.ref), vcf_allele(record.alt))
                if alleles[0] == alleles[1]:
                    continue
                line = out.new_record(contig=record.chrom, start=record.start, alleles=alleles,
                                      info=record.info)
                line.samples[sample]["GT"] = (1,)
                out.write(line)
