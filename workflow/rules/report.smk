# Tables and figures for `snakemake --report results/report.html`: throughput of every
# alignment job (from the --stats files the CLI writes), the identity distribution of the
# reported alignments, and the top hits of the search.


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
        pafs=identity_sources,
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
