# Optimal three-sequence alignments of the triplets, in batches; one MAF with every block
# and one aligned FASTA per triplet. The triplets are listed in the config (explicit) or
# made from each query's best hit in two protein sets (best_hits).
# The search and align3 jobs ask for a GPU (unless `backend: cpu`) like the pairwise jobs.


rule best_hits:
    input:
        queries=config["three_way"].get("best_hits", {}).get("queries", []),
        proteins=lambda wildcards: config["three_way"]["best_hits"]["sets"][
            int(wildcards.set) - 1
        ],
    output:
        hits="results/three_way/best_hits/set{set}.tsv",
        stats="results/stats/best_hits/set{set}.json",
    log:
        "logs/best_hits/set{set}.log",
    benchmark:
        "benchmarks/best_hits/set{set}.tsv"
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
        scoring=scoring_options("three_way"),
    shell:
        "{params.gpualign} {resources.gpu_slot} search --query {input.queries:q} "
        "--db {input.proteins:q} --top 1 --out-blast {output.hits:q} {params.scoring} "
        "--backend {params.backend} --threads {threads} "
        "--stats {output.stats:q} 2> {log:q}"


rule make_triplets:
    input:
        hits=expand("results/three_way/best_hits/set{set}.tsv", set=["1", "2"]),
    output:
        triplets="results/three_way/triplets.tsv",
    log:
        "logs/make_triplets.log",
    benchmark:
        "benchmarks/make_triplets.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        gpualign=GPUALIGN,
    shell:
        "{params.gpualign} triplets --hits {input.hits:q} --names query set1 set2 "
        "--out {output.triplets:q} 2> {log:q}"


checkpoint split_triplets:
    input:
        triplets=triplet_list(),
    output:
        directory("results/three_way/batches"),
    log:
        "logs/split_triplets.log",
    benchmark:
        "benchmarks/split_triplets.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        gpualign=GPUALIGN,
        parts=config["three_way"]["batches"],
    shell:
        "{params.gpualign} split --lines {input.triplets:q} --parts {params.parts} "
        "--out-dir {output:q} 2> {log:q}"


rule three_way_batch:
    input:
        sequences=triplet_sequences(),
        triplets="results/three_way/batches/{batch}.tsv",
    output:
        maf=temp("results/three_way/parts/{batch}.maf"),
        fasta=temp(directory("results/three_way/parts/{batch}.fasta")),
        stats="results/stats/three_way/{batch}.json",
    log:
        "logs/three_way/{batch}.log",
    benchmark:
        "benchmarks/three_way/{batch}.tsv"
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
        fasta=lambda wildcards, input: triplet_fasta_options(input.sequences),
        scoring=scoring_options("three_way"),
    shell:
        "{params.gpualign} {resources.gpu_slot} align3 --fasta {params.fasta} --triplets {input.triplets:q} "
        "--maf {output.maf:q} --fasta-dir {output.fasta:q} {params.scoring} "
        "--backend {params.backend} --threads {threads} --stats {output.stats:q} 2> {log:q}"


rule merge_three_way:
    input:
        mafs=lambda wildcards: expand(
            "results/three_way/parts/{batch}.maf", batch=triplet_batches()
        ),
        fasta=lambda wildcards: expand(
            "results/three_way/parts/{batch}.fasta", batch=triplet_batches()
        ),
    output:
        maf="results/three_way/all.maf",
        fasta=directory("results/three_way/fasta"),
    log:
        "logs/merge_three_way.log",
    benchmark:
        "benchmarks/merge_three_way.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        gpualign=GPUALIGN,
    shell:
        "{params.gpualign} merge-alignments --maf {input.mafs:q} --out-maf {output.maf:q} "
        "--fasta-dir {input.fasta:q} --out-fasta-dir {output.fasta:q} 2> {log:q}"
