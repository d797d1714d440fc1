"""gpualign: exact dynamic-programming sequence alignment on NVIDIA GPUs (CuPy) and CPUs (Numba).

The public API is re-exported here; see README.md and docs/ALGORITHMS.md for the
conventions (0-based half-open forward-strand coordinates, gap cost open + k*extend,
written tie-breaking rules shared by every engine).
"""

import sys
import types
from importlib import import_module

from gpualign_plugin.version import __version__

# Imported for its side effect only: Numba's code-generation option, set before any kernel
# compiles (kernels compile on their first call). Cheap: it loads llvmlite, not Numba.
import_module("gpualign_plugin.runtime.numba_options")

#: Public name -> the module (below the package) that defines it. The names are loaded on
#: first use (PEP 562), so ``import gpualign_plugin`` -- and every ``gpualign`` command, which
#: imports the package first -- pays only for what it touches: a GPU search loads neither the
#: other problems' modules nor SciPy.
_EXPORTS = {
    "align3.api": ("Region", "align3", "align3_score"),
    "batch.api": ("align_batch", "align_batch_gpu", "score_batch"),
    "compare.api": ("Difference", "GenomeComparison", "compare_genomes"),
    "compare.simulate": ("PlantedEvent", "SimulationParameters", "simulate_genome"),
    "errors": ("BackendUnavailable", "InputError"),
    "fold.api": ("Fold", "fold", "fold_many"),
    "io.blasttab": ("write_blast_tab",),
    "io.fasta": ("iter_fasta", "read_fasta"),
    "io.maf": ("read_maf", "write_maf"),
    "io.paf": ("read_paf", "write_paf"),
    "io.pairwise_text": ("write_pairwise_text",),
    "io.sam": ("merge_bams", "write_alignments"),
    "model": ("Alignment", "Cigar", "Hit", "MultipleAlignment", "PairAlignment", "PairScore",
              "SearchResult", "SyntenicAlignment", "SyntenicBlock"),
    "pairwise.api": ("align_pair", "align_sequences", "place_local", "score_pair", "score_pair_tiled"),
    "pairwise.placement": ("place",),
    "scoring": ("DNA", "PROTEIN", "ScoringScheme", "Sequence"),
    "search.api": ("score_database", "search"),
    "syntenic.api": ("syntenic", "syntenic_align", "syntenic_score"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    """Load a public name from its module on first access (then it is a plain attribute)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'gpualign_plugin' has no attribute {name!r}")
    value = getattr(import_module(f"gpualign_plugin.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_WHERE))


class _Facade(types.ModuleType):
    """The package module: a public function keeps its name when its subpackage of the same name
    (``search``, ``fold``, ``align3``, ``syntenic``) is imported later, as with eager imports."""

    def __setattr__(self, name: str, value) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return  # the subpackage stays reachable through sys.modules and its own imports
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade


__all__ = ["__version__", *_WHERE]
