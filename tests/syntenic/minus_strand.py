"""A minus-strand contig from real sequence: a strain of a lambda phage window, cut into contigs.

``ctg_minus`` is a 3 kb piece of the strain given as its reverse complement (as about half the
contigs of an assembly come out), ``ctg_plus`` a 3 kb piece as it is; the target is the 10 kb
lambda window the strain was simulated from (1% substitutions, small indels, a 150 bp foreign
insertion inside ``ctg_minus``, a 200 bp deletion inside ``ctg_plus``).
"""

from __future__ import annotations

import os

from paths import RESOURCES

from gpualign_plugin.compare.simulate import SimulationParameters, simulate_genome
from gpualign_plugin.scoring import reverse_complement_text

TARGET_ID = "lambda_4k_14k"
"""Id of the target record: lambda (NC_001416.1) bases 4,000 to 14,000."""


def lambda_text() -> str:
    """The lambda phage genome of the demo data (48,502 bp), upper case."""
    with open(os.path.join(RESOURCES, "genomes", "lambda.fa")) as handle:
        return "".join(line.strip() for line in handle if not line.startswith(">")).upper()


def contigs() -> tuple[str, dict[str, str]]:
    """The target's text and the contigs ``{'ctg_minus': ..., 'ctg_plus': ...}`` (see the module)."""
    window = lambda_text()[4000:14000]
    params = SimulationParameters(inversion_length=0, deletion_length=200, insertion_length=150,
                                  transposition_length=0, substitution_rate=0.01, indel_rate=0.002)
    ((_, strain),), _ = simulate_genome([(TARGET_ID, window)], params, seed=11)
    return window, {"ctg_minus": reverse_complement_text(strain[1000:4000]),
                    "ctg_plus": strain[5500:8500]}


def write_case(folder) -> tuple[str, str, str, dict[str, str]]:
    """Write ``q.fa`` (both contigs) and ``t.fa`` (the target) into ``folder``.

    Returns their paths, the target's text and the contigs.
    """
    target, pieces = contigs()
    q_path, t_path = os.path.join(folder, "q.fa"), os.path.join(folder, "t.fa")
    with open(q_path, "w") as handle:
        handle.writelines(f">{name}\n{text}\n" for name, text in pieces.items())
    with open(t_path, "w") as handle:
        handle.write(f">{TARGET_ID}\n{target}\n")
    return q_path, t_path, target, pieces
