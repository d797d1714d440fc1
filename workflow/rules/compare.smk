# Each query genome against the reference in one command, as MUMmer's dnadiff: local
# placement of every contig, syntenic alignment per placed region on its strand, a
# dnadiff-layout report, the differences, SNPs and small indels (VCF), the placements (BAM)
# and a classified dot plot. Runs when the syntenic analysis is on; asks for a GPU like
# the other alignment jobs.


rule compare:
    input:
        query=lambda wildcards: genome_fasta(wildcards.genome),
        reference=genome_fasta(REFERENCE),
    output:
        report=report(
            "results/compare/{genome}/{genome}.report",
            category="Genome comparison",
            subcategory="{genome}",
            caption="../report/summary.rst",
            labels={"genome": "{genome}", "table": "summary (dnadiff layout)"},
        ),
        bam="results/compare/{genome}/{genome}.bam",
        bai=f"results/compare/{{genome}}/{{genome}}.bam.{bam_index_extension()}",
        vcf="results/compare/{genome}/{genome}.vcf",
        differences="results/compare/{genome}/{genome}.differences.tsv",
        dotplot=report(
            "results/compare/{genome}/{genome}.dotplot.png",
            category="Genome comparison",
            subcategory="{genome}",
            caption="../report/dotplot.rst",
            labels={"genome": "{genome}", "figure": "classified dot plot"},
        ),
        stats="results/stats/compare/{genome}.json",
    log:
        "logs/compare/{genome}.log",
    benchmark:
        "benchmarks/compare/{genome}.tsv"
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
        prefix=lambda wildcards, output: output.report[: -len(".report")],
        block_penalty=(
            f"--block-penalty {config['syntenic']['block_penalty']}"
            if "block_penalty" in config["syntenic"]
            else ""
        ),
        scoring=scoring_options("syntenic"),
    shell:
        "{params.gpualign} {resources.gpu_slot} compare --query {input.query:q} "
        "--target {input.reference:q} --prefix {params.prefix:q} {params.block_penalty} "
        "{params.scoring} --backend {params.backend} --threads {threads} "
        "--stats {output.stats:q} 2> {log:q}"


rule compare_table:
    input:
        differences="results/compare/{genome}/{genome}.differences.tsv",
    output:
        html=report(
            "results/compare/{genome}/{genome}.differences.html",
            category="Genome comparison",
            subcategory="{genome}",
            caption="../report/differences.rst",
            labels={"genome": "{genome}", "table": "differences (sortable)"},
        ),
    log:
        "logs/compare_table/{genome}.log",
    benchmark:
        "benchmarks/compare_table/{genome}.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="differences",
    script:
        "../scripts/report_tables.py"
