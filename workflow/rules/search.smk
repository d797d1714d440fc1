# Protein queries against the database, one job per database shard; the shards' top-k
# lists merge exactly into the top-k of the whole database.


rule search_shard:
    input:
        queries=config.get("search", {}).get("queries", []),
        database=config.get("search", {}).get("database", []),
    output:
        hits=temp("results/search/shards/{shard}.tsv"),
        sam=temp("results/search/shards/{shard}.sam"),
        stats="results/stats/search/{shard}.json",
    params:
        gpualign=GPUALIGN,
        gpu_slot=GPU_SLOT,
        backend=config["backend"],
        shards=config.get("search", {}).get("shards", 1),
        top=config.get("search", {}).get("top", 5),
        scoring=scoring_options("search"),
    log:
        "logs/search/{shard}.log",
    benchmark:
        "benchmarks/search/{shard}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=config["mem_mb"],
        gpu=GPU_PER_JOB,
    conda:
        "../envs/gpualign.yaml"
    shell:
        "{params.gpu_slot} {params.gpualign} search --query {input.queries:q} --db {input.database:q} "
        "--out {output.hits:q} --sam {output.sam:q} --top {params.top} "
        "--shards {params.shards} --shard {wildcards.shard} {params.scoring} "
        "--backend {params.backend} --threads {threads} --stats {output.stats:q} 2> {log:q}"


rule merge_search:
    input:
        hits=expand("results/search/shards/{shard}.tsv",
                    shard=shard_names(config.get("search", {}).get("shards", 1))),
        sams=expand("results/search/shards/{shard}.sam",
                    shard=shard_names(config.get("search", {}).get("shards", 1))),
    output:
        hits="results/search/hits.tsv",
        sam="results/search/hits.sam",
    params:
        gpualign=GPUALIGN,
        top=config.get("search", {}).get("top", 5),
    log:
        "logs/merge_search.log",
    benchmark:
        "benchmarks/merge_search.tsv"
    threads: 1
    resources:
        mem_mb=1000,
    conda:
        "../envs/gpualign.yaml"
    shell:
        "{params.gpualign} merge-hits --top {params.top} --out {output.hits:q} --sam {output.sam:q} "
        "{input.hits:q} --sam-inputs {input.sams:q} 2> {log:q}"
