# Place each query genome's records on the reference: split by record, align each part,
# merge into one coordinate-sorted, indexed BAM and one PAF per query genome.


checkpoint split_genome:
    input:
        fasta=lambda wildcards: genome_fasta(wildcards.genome),
    output:
        directory("results/split/{genome}"),
    log:
        "logs/split/{genome}.log",
    benchmark:
        "benchmarks/split/{genome}.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        gpualign=GPUALIGN,
        parts=config["pairwise"]["shards"],
    shell:
        "{params.gpualign} split --fasta {input.fasta:q} --parts {params.parts} --out-dir {output:q} "
        "2> {log:q}"


rule pairwise_shard:
    input:
        query="results/split/{genome}/{shard}.fa",
        reference=genome_fasta(REFERENCE),
    output:
        bam=temp("results/pairwise/{genome}/shards/{shard}.bam"),
        paf=temp("results/pairwise/{genome}/shards/{shard}.paf"),
        # The shard's index (the BAM writer makes one): removed with the shard.
        index=temp(
            f"results/pairwise/{{genome}}/shards/{{shard}}.bam.{bam_index_extension()}"
        ),
        stats="results/stats/pairwise/{genome}.{shard}.json",
    log:
        "logs/pairwise/{genome}.{shard}.log",
    benchmark:
        "benchmarks/pairwise/{genome}.{shard}.tsv"
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
        mode=config["pairwise"]["mode"],
        evalue=config["pairwise"]["evalue"],
        strand=config["pairwise"]["strand"],
        min_score=config["pairwise"]["min_score"],
        scoring=scoring_options("pairwise"),
    shell:
        "{params.gpualign} {resources.gpu_slot} pairwise --query {input.query:q} --target {input.reference:q} "
        "--out {output.bam:q} --out {output.paf:q} --mode {params.mode} --evalue {params.evalue} "
        "--strand {params.strand} "
        "--min-score {params.min_score} {params.scoring} --backend {params.backend} --threads {threads} "
        "--stats {output.stats:q} 2> {log:q}"


rule merge_pairwise:
    input:
        bams=lambda wildcards: expand(
            "results/pairwise/{genome}/shards/{shard}.bam",
            genome=wildcards.genome,
            shard=pairwise_shards(wildcards.genome),
        ),
        pafs=lambda wildcards: expand(
            "results/pairwise/{genome}/shards/{shard}.paf",
            genome=wildcards.genome,
            shard=pairwise_shards(wildcards.genome),
        ),
    output:
        bam="results/pairwise/{genome}.bam",
        # Listed after the BAM: Snakemake touches outputs in order, so the index stays newer.
        index=f"results/pairwise/{{genome}}.bam.{bam_index_extension()}",
        paf="results/pairwise/{genome}.paf",
    log:
        "logs/merge_pairwise/{genome}.log",
    benchmark:
        "benchmarks/merge_pairwise/{genome}.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        gpualign=GPUALIGN,
    shell:
        "{params.gpualign} merge-alignments --bam {input.bams:q} --paf {input.pafs:q} "
        "--out-bam {output.bam:q} --out-paf {output.paf:q} 2> {log:q}"
