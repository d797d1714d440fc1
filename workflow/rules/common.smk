"""Configuration checks and input functions shared by every rule file.

Included first by the Snakefile. The config is validated against
workflow/schemas/config.schema.yaml (defaults filled in), then checked for what a schema
cannot say: one reference genome, unique names, the sections each switched-on analysis
needs, and input files that exist under paths without braces (which Snakemake would read as
wildcards). Every error names the config key.
"""

import hashlib
import os
import shlex
import shutil
import sys

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")


def _config_error(key, message):
    raise WorkflowError(f"config key '{key}': {message}")


def _check_config():
    names = [genome["name"] for genome in config["genomes"]]
    for index, name in enumerate(names):
        if names.index(name) != index:
            _config_error(
                f"genomes[{index}].name", f"genome name {name!r} is used twice"
            )
    references = [
        genome for genome in config["genomes"] if genome["role"] == "reference"
    ]
    if len(references) != 1:
        _config_error(
            "genomes",
            f"exactly one genome must have role 'reference', found {len(references)}",
        )
    needs_queries = config["analyses"]["pairwise"] or config["analyses"]["syntenic"]
    if needs_queries and len(names) < 2:
        _config_error(
            "genomes", "pairwise and syntenic analyses need at least one query genome"
        )
    paths = [
        (f"genomes[{index}].fasta", genome["fasta"])
        for index, genome in enumerate(config["genomes"])
    ]
    if config["analyses"]["search"]:
        if "search" not in config:
            _config_error(
                "search", "analyses.search is on but there is no search section"
            )
        paths += [
            ("search.queries", config["search"]["queries"]),
            ("search.database", config["search"]["database"]),
        ]
    if config["analyses"]["three_way"]:
        three_way = config["three_way"]
        if ("explicit" in three_way) == ("best_hits" in three_way):
            _config_error("three_way", "give exactly one of 'explicit' and 'best_hits'")
        if "explicit" in three_way:
            paths += [
                ("three_way.explicit.sequences", three_way["explicit"]["sequences"]),
                ("three_way.explicit.triplets", three_way["explicit"]["triplets"]),
            ]
        else:
            paths += [
                ("three_way.best_hits.queries", three_way["best_hits"]["queries"])
            ]
            paths += [
                (f"three_way.best_hits.sets[{index}]", path)
                for index, path in enumerate(three_way["best_hits"]["sets"])
            ]
    for key, path in paths:
        if "{" in path or "}" in path:
            _config_error(
                key,
                f"braces in the path {path} would be read by Snakemake as a wildcard; "
                "rename the file or link it under a name without braces",
            )
        if not os.path.isfile(path):
            _config_error(
                key,
                f"file not found: {path} (relative paths are read from "
                f"{os.getcwd()})",
            )


_check_config()

GENOMES = {genome["name"]: genome for genome in config["genomes"]}
REFERENCE = next(
    name for name, genome in GENOMES.items() if genome["role"] == "reference"
)
QUERIES = [name for name, genome in GENOMES.items() if genome["role"] == "query"]

# A job asks the scheduler for a GPU unless the config pins the CPU. Under SLURM this
# becomes --gpus=1 and SLURM sets CUDA_VISIBLE_DEVICES, so device 0 is the job's own GPU.
GPU_PER_JOB = 0 if config["backend"] == "cpu" else 1


def gpualign_command():
    """How the rules call gpualign.

    With ``--sdm conda`` the rule's environment (envs/gpualign.yaml) holds the
    dependencies and the package comes from the checkout this workflow belongs to, put on
    ``PYTHONPATH``: no relative path that depends on where Snakemake runs or copies the env
    file. Otherwise ``gpualign`` as installed by pip, or, from a bare checkout, the same
    interpreter as Snakemake.
    """
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        checkout = os.path.normpath(
            os.path.join(str(workflow.current_basedir), "..", "..")
        )
        if not os.path.isdir(os.path.join(checkout, "gpualign_plugin")):
            raise WorkflowError(
                f"--sdm conda: the gpualign package is not beside the workflow ({checkout})"
            )
        return (
            f"PYTHONPATH={shlex.quote(checkout)}${{PYTHONPATH:+:$PYTHONPATH}} "
            "python -m gpualign_plugin.cli.main"
        )
    if shutil.which("gpualign"):
        return "gpualign"
    return f"{shlex.quote(sys.executable)} -m gpualign_plugin.cli.main"


GPUALIGN = gpualign_command()

# Locally, with several GPUs, each alignment job takes a free device through a lock file
# (`gpualign --local-gpus N`, gpualign_plugin/runtime/gpu_slot.py); `--resources gpu=N`
# keeps at most N such jobs running. The rules take it as a resource (a string), not a
# param: it says where a job runs, not what it computes, so changing local_gpus reruns
# nothing (a param change would rerun every alignment job).
GPU_SLOT = (
    f"--local-gpus {config['local_gpus']} --gpu-lock-dir results/.gpu-slots"
    if GPU_PER_JOB and config["local_gpus"] > 1
    else ""
)


wildcard_constraints:
    genome="[A-Za-z0-9][A-Za-z0-9_-]*",
    shard="[0-9]+",
    batch="[0-9]+",
    set="[12]",


def bam_index_extension():
    """``bai``, or ``csi`` when a reference record is too long for BAI (the BAM writer's choice).

    A plain FASTA file smaller than the BAI limit (``2**29``, ``BAI_MAX_LENGTH`` of
    gpualign_plugin.io.sam) cannot hold a longer record, so only large or compressed
    references need their record lengths (:func:`reference_lengths`); the common case
    imports nothing (pysam) at parse time.
    """
    path = genome_fasta(REFERENCE)
    with open(path, "rb") as handle:
        compressed = handle.read(2) == b"\x1f\x8b"
    if not compressed and os.path.getsize(path) <= 2**29:
        return "bai"
    from gpualign_plugin.io.sam import index_kind

    return index_kind(reference_lengths(path))


def reference_lengths(path):
    """Record lengths (residues) of the FASTA file ``path``, read as rarely as possible.

    Snakemake parses the Snakefile again for every job (each SLURM job too), and reading a
    gzipped human genome takes about a minute. So the lengths come from its ``samtools faidx``
    index (``PATH.fai``) when that is not older than the file, else from
    ``.snakemake/gpualign/lengths-*.txt``, written the first time a file of this path, size
    and modification time was read.
    """
    fai = f"{path}.fai"
    if os.path.exists(fai) and os.path.getmtime(fai) >= os.path.getmtime(path):
        with open(fai) as handle:
            return [int(line.split("\t")[1]) for line in handle if line.strip()]
    status = os.stat(path)
    key = f"{os.path.realpath(path)}\t{status.st_size}\t{status.st_mtime_ns}"
    digest = hashlib.sha1(key.encode()).hexdigest()
    cache = os.path.join(".snakemake", "gpualign", f"lengths-{digest}.txt")
    if os.path.exists(cache):
        with open(cache) as handle:
            return [int(line) for line in handle]
    from gpualign_plugin.io.fasta import iter_fasta_text

    lengths = [len(text) for _, _, text in iter_fasta_text(path)]
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    partial = f"{cache}.{os.getpid()}"
    with open(partial, "w") as handle:
        handle.write("".join(f"{length}\n" for length in lengths))
    os.replace(partial, cache)  # jobs parsing at the same time never read half a file
    return lengths


def genome_fasta(name):
    """Path of genome ``name``'s FASTA file as given in the config."""
    return GENOMES[name]["fasta"]


def scoring_options(section):
    """Command-line scoring options of config section ``section`` (empty: the CLI defaults)."""
    scoring = config.get(section, {}).get("scoring", {})
    words = []
    for key, value in scoring.items():
        words += [f"--{key.replace('_', '-')}", shlex.quote(str(value))]
    return " ".join(words)


def database_alphabet():
    """The prepared search database's alphabet: the search scoring's kind, else ``auto``."""
    scoring = config.get("search", {}).get("scoring", {})
    if "match" in scoring or "mismatch" in scoring:
        return "dna"
    return "protein" if "matrix" in scoring else "auto"


def shard_names(width):
    """Zero-padded shard or batch numbers 0 .. width-1 (as strings)."""
    return [f"{index:03d}" for index in range(width)]


def pairwise_shards(genome):
    """Shard numbers the split of query genome ``genome`` by record produced (a checkpoint).

    In numeric order, which is file order (past 999 parts the names grow a digit).
    """
    directory = checkpoints.split_genome.get(genome=genome).output[0]
    return sorted(glob_wildcards(os.path.join(directory, "{shard}.fa")).shard, key=int)


def syntenic_pairs_file(wildcards):
    """The pairs file of ``wildcards.genome`` when records are paired by best hit, else none."""
    if config["syntenic"]["pairing"] == "best_hit":
        return f"results/syntenic/{wildcards.genome}/{wildcards.genome}.pairs.txt"
    return []


def triplet_list():
    """The triplet list: the config's explicit one, or the one made from best hits."""
    explicit = config["three_way"].get("explicit")
    return explicit["triplets"] if explicit else "results/three_way/triplets.tsv"


def triplet_sequences():
    """FASTA files the triplets' records come from."""
    explicit = config["three_way"].get("explicit")
    if explicit:
        return [explicit["sequences"]]
    best_hits = config["three_way"].get("best_hits", {})
    return [best_hits.get("queries", [])] + best_hits.get("sets", [])


def triplet_fasta_options(sequences):
    """``align3 --fasta`` arguments for ``sequences`` (named query/set1/set2 for best hits)."""
    files = [shlex.quote(path) for path in sequences]
    if "explicit" in config["three_way"]:
        return " ".join(files)
    return " ".join(
        f"{name}={path}" for name, path in zip(("query", "set1", "set2"), files)
    )


def triplet_batches():
    """Batch numbers the split of the triplet list produced, in numeric (file) order."""
    directory = checkpoints.split_triplets.get().output[0]
    return sorted(glob_wildcards(os.path.join(directory, "{batch}.tsv")).batch, key=int)


def alignment_stats(wildcards):
    """The --stats JSON of every alignment job of the switched-on analyses."""
    stats = []
    analyses = config["analyses"]
    if analyses["pairwise"]:
        for genome in QUERIES:
            stats += expand(
                "results/stats/pairwise/{genome}.{shard}.json",
                genome=genome,
                shard=pairwise_shards(genome),
            )
    if analyses["syntenic"]:
        stats += expand("results/stats/syntenic/{genome}.json", genome=QUERIES)
        stats += expand("results/stats/compare/{genome}.json", genome=QUERIES)
    if analyses["search"]:
        stats += expand(
            "results/stats/search/{shard}.json",
            shard=shard_names(config["search"]["shards"]),
        )
    if analyses["three_way"]:
        stats += expand("results/stats/three_way/{batch}.json", batch=triplet_batches())
        if "best_hits" in config["three_way"]:
            stats += expand("results/stats/best_hits/set{set}.json", set=["1", "2"])
    return stats


def identity_sources(wildcards):
    """PAF files of each kind of alignment (``pairwise``, ``syntenic``), for the histograms."""
    sources = {}
    if config["analyses"]["pairwise"]:
        sources["pairwise"] = expand("results/pairwise/{genome}.paf", genome=QUERIES)
    if config["analyses"]["syntenic"]:
        sources["syntenic"] = expand(
            "results/syntenic/{genome}/{genome}.paf", genome=QUERIES
        )
    return sources


def all_outputs():
    """Every final output of the analyses switched on in the config."""
    outputs = []
    analyses = config["analyses"]
    if analyses["pairwise"]:
        outputs += expand(
            "results/pairwise/{genome}.{ext}", genome=QUERIES, ext=["bam", "paf"]
        )
    if analyses["syntenic"]:
        outputs += expand(
            "results/syntenic/{genome}/{genome}.{ext}",
            genome=QUERIES,
            ext=[
                "blocks.tsv",
                "query.bed",
                "target.bed",
                "paf",
            ],
        )
        outputs += expand(
            "results/compare/{genome}/{genome}.{ext}",
            genome=QUERIES,
            ext=[
                "report",
                "bam",
                "vcf",
                "differences.tsv",
                "differences.html",
                "dotplot.png",
            ],
        )
    if analyses["search"]:
        outputs += ["results/search/hits.tsv", "results/search/hits.sam"]
    if analyses["three_way"]:
        outputs += ["results/three_way/all.maf", "results/three_way/fasta"]
    outputs += ["results/report/throughput.html"]
    if analyses["pairwise"] or analyses["syntenic"]:
        outputs += ["results/report/identity.png"]
    if analyses["search"]:
        outputs += ["results/report/top_hits.html"]
    if analyses["pairwise"]:
        outputs += ["results/report/bam_stats.html", "results/report/placement.html"]
    if analyses["three_way"]:
        outputs += ["results/report/three_way.html"]
    return outputs
