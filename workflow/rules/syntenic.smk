# Each query genome against the reference: syntenic alignment of record pairs (matching
# regions and difference blocks). The genome comparison itself is rules/compare.smk.
# Records are paired by name, or (syntenic.pairing: best_hit) by their primary pairwise hit:
# syntenic_pairs writes 'QUERY TARGET STRAND' lines (the hit's strand), and the syntenic rule
# passes that file to --pairs, so a query whose best hit is on the minus strand is aligned as
# its reverse complement (reported with strand '-' in the block table, BED and PAF).
# Each syntenic job asks for a GPU (unless `backend: cpu`) like the pairwise jobs.


rule syntenic_pairs:
    input:
        paf="results/pairwise/{genome}.paf",
    output:
        pairs="results/syntenic/{genome}/{genome}.pairs.txt",
    log:
        "logs/syntenic_pairs/{genome}.log",
    benchmark:
        "benchmarks/syntenic_pairs/{genome}.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=500,
    params:
        gpualign=GPUALIGN,
    shell:
        "{params.gpualign} best-pairs --paf {input.paf:q} --out {output.pairs:q} 2> {log:q}"


rule syntenic:
    input:
        query=lambda wildcards: genome_fasta(wildcards.genome),
        reference=genome_fasta(REFERENCE),
        pairs=syntenic_pairs_file,
    output:
        blocks=report(
            "results/syntenic/{genome}/{genome}.blocks.tsv",
            category="Synteny",
            subcategory="{genome}",
            caption="../report/syntenic_blocks.rst",
            labels={"genome": "{genome}", "table": "synteny blocks"},
        ),
        query_bed="results/syntenic/{genome}/{genome}.query.bed",
        target_bed="results/syntenic/{genome}/{genome}.target.bed",
        paf="results/syntenic/{genome}/{genome}.paf",
        stats="results/stats/syntenic/{genome}.json",
    log:
        "logs/syntenic/{genome}.log",
    benchmark:
        "benchmarks/syntenic/{genome}.tsv"
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
        prefix=lambda wildcards, output: output.blocks[: -len(".blocks.tsv")],
        pairs=lambda wildcards, input: (
            f"--pairs {shlex.quote(input.pairs)}" if input.pairs else ""
        ),
        block_penalty=(
            f"--block-penalty {config['syntenic']['block_penalty']}"
            if "block_penalty" in config["syntenic"]
            else ""
        ),
        scoring=scoring_options("syntenic"),
    shell:
        "{params.gpualign} {resources.gpu_slot} syntenic --query {input.query:q} --target {input.reference:q} "
        "--out-prefix {params.prefix:q} {params.pairs} {params.block_penalty} {params.scoring} "
        "--backend {params.backend} --threads {threads} --stats {output.stats:q} 2> {log:q}"
