# Tables and figures for `snakemake --report results/report.html`: throughput of every
# alignment job (from the --stats files the CLI writes), the identity distribution of each
# kind of alignment, samtools-stats-like figures of each query genome's BAM, the top hits
# of the search and a summary of the three-way alignments.


rule report_throughput:
    input:
        stats=alignment_stats,
    output:
        tsv="results/report/throughput.tsv",
        html=report(
            "results/report/throughput.html",
            category="Throughput",
            caption="../report/throughput.rst",
            labels={"table": "throughput per job"},
        ),
    log:
        "logs/report/throughput.log",
    benchmark:
        "benchmarks/report/throughput.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="throughput",
    script:
        "../scripts/report_tables.py"


rule report_identity:
    input:
        unpack(identity_sources),
    output:
        png=report(
            "results/report/identity.png",
            category="Identity",
            caption="../report/identity.rst",
            labels={"figure": "identity distribution"},
        ),
    log:
        "logs/report/identity.log",
    benchmark:
        "benchmarks/report/identity.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="identity",
    script:
        "../scripts/report_tables.py"


rule report_hits:
    input:
        hits="results/search/hits.tsv",
    output:
        html=report(
            "results/report/top_hits.html",
            category="Search",
            caption="../report/hits.rst",
            labels={"table": "top hits"},
        ),
    log:
        "logs/report/hits.log",
    benchmark:
        "benchmarks/report/hits.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="hits",
    script:
        "../scripts/report_tables.py"


rule report_bam_stats:
    input:
        bams=expand("results/pairwise/{genome}.bam", genome=QUERIES),
    output:
        tsv="results/report/bam_stats.tsv",
        html=report(
            "results/report/bam_stats.html",
            category="Pairwise",
            caption="../report/bam_stats.rst",
            labels={"table": "BAM statistics per query genome"},
        ),
    log:
        "logs/report/bam_stats.log",
    benchmark:
        "benchmarks/report/bam_stats.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="bam_stats",
    script:
        "../scripts/report_tables.py"


rule report_placement:
    input:
        bams=expand("results/pairwise/{genome}.bam", genome=QUERIES),
    output:
        tsv="results/report/placement.tsv",
        html=report(
            "results/report/placement.html",
            category="Pairwise",
            caption="../report/placement.rst",
            labels={"table": "every placed piece"},
        ),
    log:
        "logs/report/placement.log",
    benchmark:
        "benchmarks/report/placement.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="placement",
    script:
        "../scripts/report_tables.py"


rule report_three_way:
    input:
        maf="results/three_way/all.maf",
    output:
        tsv="results/report/three_way.tsv",
        html=report(
            "results/report/three_way.html",
            category="Three-way",
            caption="../report/three_way.rst",
            labels={"table": "three-way alignments"},
        ),
    log:
        "logs/report/three_way.log",
    benchmark:
        "benchmarks/report/three_way.tsv"
    conda:
        "../envs/gpualign.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        kind="three_way",
    script:
        "../scripts/report_tables.py"
