"""gpualign: exact dynamic-programming sequence alignment on NVIDIA GPUs (CuPy) and CPUs (Numba).

The public API is re-exported here; see README.md and docs/ALGORITHMS.md for the
conventions (0-based half-open forward-strand coordinates, gap cost open + k*extend,
written tie-breaking rules shared by every engine).
"""

from importlib import import_module

from gpualign_plugin.align3.api import Region, align3, align3_score
from gpualign_plugin.batch.api import align_batch, align_batch_gpu, score_batch
from gpualign_plugin.compare.api import Difference, GenomeComparison, compare_genomes
from gpualign_plugin.compare.simulate import PlantedEvent, SimulationParameters, simulate_genome
from gpualign_plugin.errors import BackendUnavailable, InputError
from gpualign_plugin.fold.api import Fold, fold, fold_many
from gpualign_plugin.io.blasttab import write_blast_tab
from gpualign_plugin.io.fasta import iter_fasta, read_fasta
from gpualign_plugin.io.maf import read_maf, write_maf
from gpualign_plugin.io.paf import read_paf, write_paf
from gpualign_plugin.io.pairwise_text import write_pairwise_text
from gpualign_plugin.io.sam import merge_bams, write_alignments
from gpualign_plugin.model import (Alignment, Cigar, Hit, MultipleAlignment, PairAlignment,
                                   PairScore, SearchResult, SyntenicAlignment, SyntenicBlock)
from gpualign_plugin.pairwise.api import (align_pair, align_sequences, place_local, score_pair,
                                          score_pair_tiled)
from gpualign_plugin.pairwise.placement import place
from gpualign_plugin.scoring import DNA, PROTEIN, ScoringScheme, Sequence
from gpualign_plugin.search.api import score_database, search
from gpualign_plugin.syntenic.api import syntenic, syntenic_align, syntenic_score
from gpualign_plugin.version import __version__

# Imported for its side effect only: Numba's code-generation option, set before any kernel
# compiles (kernels compile on their first call).
import_module("gpualign_plugin.runtime.numba_options")

__all__ = [
    "__version__", "align3", "align3_score", "align_batch", "align_batch_gpu", "align_pair",
    "align_sequences", "Alignment",
    "BackendUnavailable", "Cigar", "compare_genomes", "Difference", "DNA", "Fold", "fold", "fold_many",
    "GenomeComparison", "Hit", "InputError", "iter_fasta", "merge_bams", "MultipleAlignment",
    "PairAlignment", "PairScore", "place", "place_local", "PlantedEvent", "PROTEIN", "read_fasta", "read_maf",
    "read_paf", "Region", "score_batch", "score_database", "score_pair", "score_pair_tiled",
    "ScoringScheme", "search", "SearchResult", "Sequence", "simulate_genome",
    "SimulationParameters", "syntenic", "syntenic_align", "syntenic_score", "SyntenicAlignment",
    "SyntenicBlock", "write_alignments", "write_blast_tab", "write_maf", "write_paf",
    "write_pairwise_text",
]
