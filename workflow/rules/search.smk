# Protein queries against the database, one job per database shard; the shards' top-k
# lists merge exactly into the top-k of the whole database (E-values over all of it).
# The database FASTA is parsed once, by `makedb`, into a prepared database (.gadb, a
# directory) that every shard job memory-maps; the hits are byte-identical to searching
# the FASTA. Each shard job asks for a GPU (unless `backend: cpu`) like the pairwise jobs.

# The search section (defaults filled in by the schema); absent when the search is off,
# and then these rules are never run.
SEARCH = config.get("search", {"queries": [], "database": [], "shards": 1, "top": 5})


rule makedb:
    input:
        SEARCH["database"],
    output:
        directory("results/search/db.gadb"),
    log:
        "logs/makedb.log",
    benchmark:
        "benchmarks/makedb.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=config["mem_mb"],
    params:
        gpualign=GPUALIGN,
        alphabet=database_alphabet(),
    shell:
        "{params.gpualign} makedb --db {input:q} --alphabet {params.alphabet} --out {output:q} "
        "2> {log:q}"


rule search_shard:
    input:
        queries=SEARCH["queries"],
        database="results/search/db.gadb",
    output:
        hits=temp("results/search/shards/{shard}.hits"),
        stats="results/stats/search/{shard}.json",
    log:
        "logs/search/{shard}.log",
    benchmark:
        "benchmarks/search/{shard}.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: config["threads"]
    resources:
        mem_mb=config["mem_mb"],
        gpu=GPU_PER_JOB,
        gpu_slot=GPU_SLOT,
    params:
        gpualign=GPUALIGN,
        backend=config["backend"],
        shards=SEARCH["shards"],
        top=SEARCH["top"],
        scoring=scoring_options("search"),
    shell:
        "{params.gpualign} {resources.gpu_slot} search --query {input.queries:q} "
        "--db {input.database:q} --out-hits {output.hits:q} --top {params.top} --shards {params.shards} "
        "--shard {wildcards.shard} {params.scoring} --backend {params.backend} --threads {threads} "
        "--stats {output.stats:q} 2> {log:q}"


rule merge_search:
    input:
        hits=expand(
            "results/search/shards/{shard}.hits", shard=shard_names(SEARCH["shards"])
        ),
    output:
        blast="results/search/hits.tsv",
        table="results/search/hits.table.tsv",
        sam="results/search/hits.sam",
    log:
        "logs/merge_search.log",
    benchmark:
        "benchmarks/merge_search.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        gpualign=GPUALIGN,
        scoring=scoring_options("search"),
    shell:
        "{params.gpualign} merge-hits "
        "--out-blast {output.blast:q} --out-tsv {output.table:q} --out-sam {output.sam:q} "
        "{params.scoring} {input.hits:q} 2> {log:q}"
