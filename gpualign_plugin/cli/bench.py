"""``gpualign bench``: measured throughput (GCUPS) of every available engine on generated inputs.

Speed is measured here and never asserted in tests. Each row is the median of
``--repeat`` timed runs after one untimed warm-up (JIT compilation and kernel
loading stay out of the numbers). When the CPU and GPU engines both run the same
input, the ``agrees`` column says whether their scores (and, for full
alignments, CIGARs) are identical. Where the ``parasail`` Python package is
installed, the CPU score rows are followed by parasail's striped kernels (16 and
32-bit lanes) on the same input, one thread, timed interleaved with ours (run by
run, so a busy machine slows both alike), with ``agrees`` comparing the scores.
"""

from __future__ import annotations

import argparse
import functools
import platform
import resource
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.runtime.machine import cpu_description
from gpualign_plugin.scoring import ScoringScheme, reverse_complement_codes

TASKS = ("score", "align", "batch", "syntenic", "align3", "fold", "search", "placement")

EPILOG = """examples:
  gpualign bench                                  # local score-only and alignment at 20 kbp, the batch workload
  gpualign bench --tasks score --sizes 20000x20000 --threads 1
  gpualign bench --tasks score --sizes 100000x100000 --cpu-threads 0   # one pair on every core
  gpualign bench --backend gpu --sizes 100000x100000,1000000x1000000 --cpu-max-cells 1e10
  gpualign bench --tasks syntenic,align3,fold --sizes 20000x20000
  gpualign bench --backend gpu --tasks placement --placement 8x50000 --cpu-max-cells 1e10
  gpualign bench --tasks search --search-query queries.fa.gz --search-db db.fa.gz --repeat 1"""


def register(subparsers) -> None:
    """Add the ``bench`` subcommand."""
    parser = subparsers.add_parser(
        "bench", help="measure GCUPS of each engine on generated related sequences",
        description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="score,align,batch",
                        help=f"comma-separated tasks among {', '.join(TASKS)} [score,align,batch]")
    parser.add_argument("--sizes", default="20000x20000",
                        help="comma-separated QUERYxTARGET lengths for score/align [20000x20000]")
    parser.add_argument("--mode", choices=("local", "global", "semiglobal"), default="local")
    parser.add_argument("--batch", default="1000x512", metavar="PAIRSxLENGTH",
                        help="batch workload: number of pairs x length, with traceback [1000x512]")
    parser.add_argument("--placement", default="8x200000", metavar="CONTIGSxLENGTH",
                        help="placement workload: a simulated strain of a random genome of LENGTH bp "
                             "cut into CONTIGS contigs of random orientation, placed on both strands "
                             "with gpualign pairwise's default local placement [8x200000]")
    parser.add_argument("--align3-length", type=int, default=300, metavar="N",
                        help="align3: three related random proteins of N residues, full alignment [300]")
    parser.add_argument("--fold-length", type=int, default=2000, metavar="N",
                        help="fold: a random RNA of N nucleotides [2000]")
    parser.add_argument("--fold-many", default="100x500", metavar="COUNTxLENGTH",
                        help="fold: also COUNT random RNAs of LENGTH nt folded in one call [100x500]")
    parser.add_argument("--search-query", metavar="FASTA", help="search: protein queries (required for search)")
    parser.add_argument("--search-db", metavar="FASTA", help="search: protein database (required for search)")
    parser.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                        help="auto: the CPU and, if usable, the GPU; gpu: the GPU and the CPU for "
                             "comparison; cpu: the CPU only [auto]")
    parser.add_argument("--device", type=int, default=0, metavar="N")
    parser.add_argument("--threads", type=int, default=0, metavar="N", help="CPU threads for batch and placement (0 = all)")
    parser.add_argument("--cpu-threads", type=int, default=1, metavar="N",
                        help="CPU threads for the score row (0 = all; above 1, long pairs use the tiled "
                             "wavefront kernel) [1]")
    parser.add_argument("--repeat", type=int, default=3, metavar="N", help="timed runs per row; median [3]")
    parser.add_argument("--cpu-max-cells", type=float, default=2e10, metavar="N",
                        help="skip CPU score/align rows larger than this many cells [2e10]")
    parser.add_argument("--divergence", type=float, default=0.02,
                        help="substitution rate between the two generated sequences [0.02]; indels are "
                             "a twentieth of it")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--match", type=int, default=1)
    parser.add_argument("--mismatch", type=int, default=-3)
    parser.add_argument("--gap-open", type=int, default=3)
    parser.add_argument("--gap-extend", type=int, default=2)
    parser.set_defaults(run=run)


def related_pair(query_length: int, target_length: int, divergence: float, seed: int):
    """Two related random DNA code arrays (uint8, ACGT codes 0-3).

    The target is uniform random; the query is a copy of its first
    ``query_length`` bases (random bases appended if it is longer) with
    substitutions at rate ``divergence`` and insertions and deletions, each at
    rate ``divergence / 20``, of 1-5 bases.
    """
    rng = np.random.default_rng(seed)
    target = rng.integers(0, 4, target_length, dtype=np.uint8)
    base = target[:query_length]
    if query_length > target_length:
        base = np.concatenate([base, rng.integers(0, 4, query_length - target_length, dtype=np.uint8)])
    query = base.copy()
    substituted = rng.random(len(query)) < divergence
    query[substituted] = (query[substituted] + rng.integers(1, 4, int(substituted.sum()), dtype=np.uint8)) % 4
    indel_rate = divergence / 20
    pieces = []
    position = 0
    for site in np.flatnonzero(rng.random(len(query)) < indel_rate):
        if site < position:
            continue
        length = int(rng.integers(1, 6))
        pieces.append(query[position:site])
        if rng.random() < 0.5:
            pieces.append(rng.integers(0, 4, length, dtype=np.uint8))
            position = site
        else:
            position = site + length
    pieces.append(query[position:])
    query = np.concatenate(pieces)[:query_length] if pieces else query
    if len(query) < query_length:
        query = np.concatenate([query, rng.integers(0, 4, query_length - len(query), dtype=np.uint8)])
    return query, target


def rearranged_pair(length: int, divergence: float, seed: int, rearrangements: int = 3):
    """:func:`related_pair` of two ``length``-base sequences whose query then undergoes
    ``rearrangements`` block rearrangements, as between the chromosomes of related genomes:
    alternately an inversion (a block replaced by its reverse complement) and a transposition
    (a block cut out and put back elsewhere), each block 1-5% of ``length`` at a random place.
    The query keeps its length. Returns ``(query, target)`` uint8 ACGT codes.
    """
    query, target = related_pair(length, length, divergence, seed)
    rng = np.random.default_rng(seed + 1)
    for k in range(rearrangements):
        size = max(1, int(length * rng.uniform(0.01, 0.05)))
        start = int(rng.integers(0, len(query) - size + 1))
        block = query[start:start + size]
        if k % 2 == 0:
            query = np.concatenate([query[:start], reverse_complement_codes(block), query[start + size:]])
        else:
            rest = np.concatenate([query[:start], query[start + size:]])
            at = int(rng.integers(0, len(rest) + 1))
            query = np.concatenate([rest[:at], block, rest[at:]])
    return query, target


@dataclass
class Row:
    """One measured line of the table."""

    task: str
    engine: str
    device: str
    size: str
    seconds: float
    cells: float
    memory: str
    result: str
    agrees: str = ""

    @property
    def gcups(self) -> float:
        """Giga cell updates per second."""
        return self.cells / self.seconds / 1e9 if self.seconds > 0 else float("nan")


WARMUP_LENGTH = 3000
"""CPU score/align rows larger than this squared warm up on a prefix of this length (same code paths
compiled, minutes of untimed work saved); GPU rows always warm up on the full input, because
the kernel variant is chosen from the size."""


def _time(function, repeat: int, warmup=None):
    # Warm-up: JIT compilation and kernel loading stay out of the numbers.
    (warmup or function)()
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _time_interleaved(functions, repeat: int, warmups):
    """:func:`_time` of several functions, their timed runs taken in turn (one of each per round)."""
    for warmup in warmups:
        warmup()
    times = [[] for _ in functions]
    results = [None] * len(functions)
    for _ in range(repeat):
        for k, function in enumerate(functions):
            start = time.perf_counter()
            results[k] = function()
            times[k].append(time.perf_counter() - start)
    return [(statistics.median(t), r) for t, r in zip(times, results)]


PARASAIL_FUNCTIONS = {"local": "sw", "global": "nw", "semiglobal": "sg_dx"}
"""parasail's name of each mode (``sg_dx``: free end gaps on the target, the database sequence)."""


def parasail_scorers(scheme: ScoringScheme, mode: str) -> list:
    """``(name, function(query_text, target_text))`` of parasail's striped 16 and 32-bit kernels.

    Empty when parasail is not installed. The texts are the sequences in the
    alphabet's letters (convert once, outside any timing); parasail's matrix is
    the scheme's over those letters, and its gap open is ``open + extend`` (it
    charges ``open + (k - 1) * extend``). Each function returns parasail's result
    (``score``, ``saturated``, ``end_query``, ``end_ref``).
    """
    try:
        import parasail
    except ImportError:
        return []
    letters = scheme.alphabet.letters
    matrix = parasail.matrix_create(letters, 0, 0)
    for x in range(len(letters)):
        for y in range(len(letters)):
            matrix.set_value(x, y, int(scheme.matrix[x, y]))
    scorers = []
    for bits in (16, 32):
        name = f"{PARASAIL_FUNCTIONS[mode]}_striped_{bits}"
        kernel = getattr(parasail, name)

        def function(query_text, target_text, kernel=kernel):
            return kernel(query_text, target_text, scheme.gap_open + scheme.gap_extend,
                          scheme.gap_extend, matrix)

        scorers.append((f"parasail {name}", function))
    return scorers


def _parasail_rows(ours, seconds_and_results, names, device, size, cells) -> list[Row]:
    """Rows of parasail's kernels beside our CPU score ``ours``; ``agrees``: same score."""
    rows = []
    for (seconds, result), name in zip(seconds_and_results, names):
        if result.saturated:
            summary, agrees = "saturated (scores past its lane width)", "n/a"
        else:
            # parasail's end is 0-based inclusive and follows its own tie rule.
            summary = f"score {result.score} end ({result.end_query + 1},{result.end_ref + 1})"
            agrees = "yes" if result.score == ours.score else "NO"
        rows.append(Row("score", f"{name}, 1 thread", device, size, seconds, cells, _rss(), summary,
                        agrees))
    return rows


def _rss() -> str:
    return f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB RSS (process peak)"


@functools.lru_cache(maxsize=None)
def _engines(backend: str, device: int):
    from gpualign_plugin.pairwise import cpu
    from gpualign_plugin.runtime.backend import resolve_backend

    engines = [("cpu", cpu, cpu_description())]
    if backend in ("auto", "gpu") and resolve_backend(backend, device) == "gpu":
        from gpualign_plugin.pairwise import gpu
        from gpualign_plugin.runtime.gpu import probe

        engines.append(("gpu", gpu, probe(device).name))
    return engines


def _backends(args) -> list[tuple[str, str]]:
    """``(backend, device description)`` of each engine to time: the CPU, and the GPU when usable."""
    return [(name, device) for name, _module, device in _engines(args.backend, args.device)]


def _agreement(rows: list[Row], results: dict) -> None:
    """Fill the last row's ``agrees`` when both engines ran: are their results equal?"""
    if len(results) == 2:
        rows[-1].agrees = "yes" if results["cpu"] == results["gpu"] else "NO"


def _gpu_memory(engine: str) -> str:
    if engine != "gpu":
        return _rss()
    from gpualign_plugin.runtime.gpu import peak_memory_bytes

    return f"{peak_memory_bytes() / 2**20:.0f} MiB GPU pool"


def parse_size(text: str) -> tuple[int, int]:
    """``'20000x30000'`` -> ``(20000, 30000)``; raises :class:`InputError` otherwise (both
    numbers must be at least 1)."""
    try:
        left, right = text.lower().split("x")
        size = int(float(left)), int(float(right))
    except ValueError:
        raise InputError(f"size {text!r} is not of the form LENGTHxLENGTH") from None
    if min(size) < 1:
        raise InputError(f"size {text!r}: both numbers must be 1 or more")
    return size


def bench_rows(args: argparse.Namespace) -> list[Row]:
    """Run every requested measurement and return the rows (CPU first, then GPU)."""
    scheme = ScoringScheme.dna(args.match, args.mismatch, args.gap_open, args.gap_extend)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        raise InputError(f"unknown bench task(s) {', '.join(unknown)}; choose from {', '.join(TASKS)}")
    engines = _engines(args.backend, args.device)
    cpu_threads = _cpu_threads(args.cpu_threads)
    rows: list[Row] = []
    for size_text in args.sizes.split(",") if {"score", "align"} & set(tasks) else []:
        m, n = parse_size(size_text)
        query, target = related_pair(m, n, args.divergence, args.seed)
        for task in ("score", "align"):
            if task not in tasks:
                continue
            results = {}
            for name, module, device in engines:
                if name == "cpu" and m * n > args.cpu_max_cells:
                    rows.append(Row(task, name, device, f"{m}x{n}", float("nan"), m * n, "",
                                    f"skipped (> --cpu-max-cells {args.cpu_max_cells:g})"))
                    continue
                function = module.score_pair if task == "score" else module.align_pair
                engine = name
                if name == "gpu":
                    kwargs = {"device": args.device}
                    if task == "score":
                        engine = f"gpu, {module.score_kernel(m, scheme, args.mode, args.device)} sweep"
                elif task == "score":
                    kwargs = {"threads": cpu_threads}
                    # Pairs too small to tile run on one thread whatever is allowed.
                    used = cpu_threads if module.tile_shape(m, n, cpu_threads) else 1
                    engine = f"cpu, {used} thread{'s' if used > 1 else ''}"
                else:
                    kwargs = {}
                    engine = "cpu, 1 thread"
                ours = functools.partial(function, query, target, scheme, args.mode, **kwargs)
                warmups = [ours]
                if name == "cpu" and min(m, n) > WARMUP_LENGTH:
                    # A square prefix, then the prefix of the query against the whole target
                    # (the lane width a long pair needs is compiled before the timing).
                    warmups = [functools.partial(function, query[:WARMUP_LENGTH], target[:WARMUP_LENGTH],
                                                 scheme, args.mode, **kwargs),
                               functools.partial(function, query[:WARMUP_LENGTH], target, scheme,
                                                 args.mode, **kwargs)]
                others = parasail_scorers(scheme, args.mode) if name == "cpu" and task == "score" else []
                texts = ["".join(scheme.alphabet.letters[c] for c in codes) for codes in (query, target)] \
                    if others else []
                timed = _time_interleaved([ours] + [functools.partial(f, *texts) for _, f in others],
                                          args.repeat, warmups +
                                          [functools.partial(f, *(x[:300] for x in texts)) for _, f in others])
                seconds, result = timed[0]
                results[name] = result
                summary = f"score {result.score} end ({result.query_end},{result.target_end})"
                if task == "align":
                    summary += f" cigar runs {len(result.cigar)}"
                rows.append(Row(task, engine, device, f"{m}x{n}", seconds, m * n, _gpu_memory(name), summary))
                rows.extend(_parasail_rows(result, timed[1:], [label for label, _ in others], device,
                                           f"{m}x{n}", m * n))
            _agreement(rows, results)
    if "batch" in tasks:
        rows.extend(_batch_rows(args, scheme))
    if "syntenic" in tasks:
        rows.extend(_syntenic_rows(args, scheme))
    if "align3" in tasks:
        rows.extend(_align3_rows(args))
    if "fold" in tasks:
        rows.extend(_fold_rows(args))
    if "search" in tasks:
        rows.extend(_search_rows(args))
    if "placement" in tasks:
        rows.extend(_placement_rows(args))
    return rows


def placement_workload(count: int, length: int, seed: int):
    """Contigs and reference of the placement row: a random genome of ``length`` bp, a strain of
    it simulated with every large event (:mod:`gpualign_plugin.compare.simulate` defaults, each
    event at most 1/16 of the genome), cut into ``count`` contigs of equal length, each
    reverse-complemented with probability 1/2, and ``max(1, count // 32)`` unrelated random
    contigs of the same length (to be reported unmapped)."""
    from gpualign_plugin.compare.simulate import SimulationParameters, simulate_genome
    from gpualign_plugin.scoring import reverse_complement_text

    rng = np.random.default_rng(seed)
    genome = "".join(rng.choice(list("ACGT"), length))
    events = {name: min(getattr(SimulationParameters, name), length // 16) for name in
              ("inversion_length", "deletion_length", "insertion_length", "transposition_length")}
    strain, _ = simulate_genome([("genome", genome)], SimulationParameters(**events), seed)
    text = strain[0][1]
    size = -(-len(text) // count)
    scheme = ScoringScheme.dna()
    contigs = []
    for k in range(count):
        piece = text[k * size:(k + 1) * size]
        if rng.random() < 0.5:
            piece = reverse_complement_text(piece)
        contigs.append(scheme.encode(f"contig{k}", piece))
    for k in range(max(1, count // 32)):
        contigs.append(scheme.encode(f"unrelated{k}", "".join(rng.choice(list("ACGT"), size))))
    return contigs, [scheme.encode("genome", genome)], scheme


def _placement_rows(args) -> list[Row]:
    from gpualign_plugin.cli.common import apply_threads
    from gpualign_plugin.pairwise.api import place_local

    count, length = parse_size(args.placement)
    threads = apply_threads(args.threads)
    contigs, reference, scheme = placement_workload(count, length, args.seed)
    first_pass = 2 * length * sum(len(c) for c in contigs)
    rows, results = [], {}
    for backend, device in _backends(args):
        if backend == "cpu" and first_pass > args.cpu_max_cells:
            rows.append(Row("placement", backend, device, args.placement, float("nan"), first_pass, "",
                            f"skipped (> --cpu-max-cells {args.cpu_max_cells:g})"))
            continue
        cells, profile = [], {}

        def function(backend=backend):
            cells.clear()
            profile.clear()
            return place_local(contigs, reference, scheme, backend=backend, device=args.device,
                               on_cells=cells.append, gpu_profile=profile if backend == "gpu" else None)

        # One warm-up on the first contig compiles the kernels; the timed run is the whole set.
        warm = functools.partial(place_local, contigs[:1], reference, scheme, backend=backend,
                                 device=args.device)
        seconds, result = _time(function, 1, warm)
        results[backend] = result
        kinds = [sum(a.is_primary and not a.is_supplementary for a in result),
                 sum(a.is_supplementary for a in result), sum(not a.is_primary for a in result)]
        if backend == "cpu":
            device = f"{device}, {threads} threads"
        rows.append(Row("placement", backend, device, args.placement, seconds, sum(cells),
                        _gpu_memory(backend), f"{kinds[0]} primary, {kinds[1]} supplementary, "
                        f"{kinds[2]} secondary of {len(contigs)} contigs" + _placement_summary(profile)))
    _agreement(rows, results)
    return rows


def _placement_summary(profile: dict) -> str:
    """The GPU placement's phase split from its profile (empty when its driver did not run):
    seconds in score calls and waiting for alignments only (they overlap the calls)."""
    if "score_calls" not in profile:
        return ""
    return (f"; {profile['score_calls']} score calls {profile['score_wait_s']:.2f} s "
            f"({profile['swept_cells']:.4g} swept cells; {profile['pruned_cells']:.4g} cells pruned in "
            f"all score passes), waiting for alignments only "
            f"{profile['align_wait_s']:.2f} s ({profile['cpu_alignments']} of {profile['alignments']} "
            f"on CPU threads)")


def _cpu_threads(requested: int) -> int:
    import numba

    if requested < 0:
        raise InputError(f"--cpu-threads must be 0 or more, got {requested}")
    available = numba.config.NUMBA_NUM_THREADS
    return available if requested == 0 else min(requested, available)


def _batch_rows(args, scheme) -> list[Row]:
    from gpualign_plugin.batch.api import align_batch
    from gpualign_plugin.cli.common import apply_threads

    count, length = parse_size(args.batch)
    threads = apply_threads(args.threads)
    pairs = [related_pair(length, length, args.divergence, args.seed + k) for k in range(count)]
    rows, results = [], {}
    for backend, device in _backends(args):
        seconds, result = _time(lambda: align_batch(pairs, scheme, args.mode, backend, args.device),
                                args.repeat)
        results[backend] = result
        summary = f"{count} alignments, total score {sum(r.score for r in result)}"
        if backend == "cpu":
            device = f"{device}, {threads} threads"
        else:
            from gpualign_plugin.batch import gpu

            profile: dict = {}
            gpu.align_batch(pairs, scheme, args.mode, args.device, profile=profile)
            summary += f"; kernel {profile['kernel_seconds'] * 1e3:.2f} ms"
        rows.append(Row("batch+traceback", backend, device, f"{count}x{length}", seconds,
                        count * length * length, _gpu_memory(backend), summary))
    _agreement(rows, results)
    return rows


SYNTENIC_ALIGN_MAX_CELLS = 1e10
"""Largest syntenic full alignment timed (100 kbp x 100 kbp): above it the checkpointed
traceback's extra forward passes make a bench row take minutes on either engine."""


def _syntenic_rows(args, scheme) -> list[Row]:
    from gpualign_plugin.syntenic.api import default_block_penalty, syntenic_align, syntenic_score

    rows = []
    penalty = default_block_penalty(scheme)
    for size_text in args.sizes.split(","):
        m, n = parse_size(size_text)
        query, target = related_pair(m, n, args.divergence, args.seed)
        for task in ("syntenic score", "syntenic align"):
            if task == "syntenic align" and m * n > SYNTENIC_ALIGN_MAX_CELLS:
                continue
            results = {}
            for backend, device in _backends(args):
                if backend == "cpu" and m * n > args.cpu_max_cells:
                    rows.append(Row(task, backend, device, f"{m}x{n}", float("nan"), m * n, "",
                                    f"skipped (> --cpu-max-cells {args.cpu_max_cells:g})"))
                    continue
                if task == "syntenic score":
                    def function(backend=backend):
                        return syntenic_score(query, target, scheme, penalty, backend=backend,
                                              device=args.device)
                else:
                    def function(backend=backend):
                        return syntenic_align(query, target, scheme, penalty, backend=backend,
                                              device=args.device)
                seconds, result = _time(function, args.repeat)
                results[backend] = result
                summary = (f"score {result} (block penalty {penalty})" if task == "syntenic score" else
                           f"score {result.score}, {len(result.blocks)} regions and blocks")
                rows.append(Row(task, backend, device, f"{m}x{n}", seconds, m * n, _gpu_memory(backend),
                                summary))
            _agreement(rows, results)
    return rows


def related_proteins(length: int, count: int, seed: int) -> list[np.ndarray]:
    """``count`` related random proteins of ``length`` residues (codes of the 20 amino acids).

    Each is a copy of one random ancestor with 30% of its residues replaced.
    """
    rng = np.random.default_rng(seed)
    ancestor = rng.integers(0, 20, length, dtype=np.uint8)
    proteins = []
    for _ in range(count):
        copy = ancestor.copy()
        changed = rng.random(length) < 0.3
        copy[changed] = rng.integers(0, 20, int(changed.sum()), dtype=np.uint8)
        proteins.append(copy)
    return proteins


def _align3_rows(args) -> list[Row]:
    from gpualign_plugin.align3.api import align3, default_linear_gap

    scheme = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
    gap = default_linear_gap(scheme)
    length = args.align3_length
    letters = scheme.alphabet.letters
    records = [scheme.encode(f"p{k}", "".join(letters[c] for c in codes))
               for k, codes in enumerate(related_proteins(length, 3, args.seed))]
    cells = (length + 1) ** 3
    rows, results = [], {}
    for backend, device in _backends(args):
        seconds, result = _time(lambda: align3(*records, scheme, gap, backend=backend, device=args.device),
                                args.repeat)
        results[backend] = result
        rows.append(Row("align3 (full)", backend, device, f"3x{length} aa", seconds, cells,
                        _gpu_memory(backend),
                        f"sum-of-pairs score {result.score}, {result.columns} columns (linear gap {gap})"))
    _agreement(rows, results)
    return rows


def _fold_rows(args) -> list[Row]:
    from gpualign_plugin.fold.api import fold, fold_cells, fold_many

    rng = np.random.default_rng(args.seed)
    text = "".join(rng.choice(list("ACGU"), args.fold_length))
    count, length = parse_size(args.fold_many)
    many = ["".join(rng.choice(list("ACGU"), length)) for _ in range(count)]
    rows = []
    for size, cells, function in (
            (f"{args.fold_length} nt", fold_cells(args.fold_length),
             lambda backend: fold(text, backend=backend, device=args.device)),
            (f"{count}x{length} nt", count * fold_cells(length),
             lambda backend: fold_many(many, backend=backend, device=args.device))):
        results = {}
        for backend, device in _backends(args):
            seconds, result = _time(lambda: function(backend), args.repeat)
            results[backend] = result
            pairs = result.score if hasattr(result, "score") else sum(r.score for r in result)
            rows.append(Row("fold (Nussinov)", backend, device, size, seconds, cells, _gpu_memory(backend),
                            f"{pairs} pairs"))
        _agreement(rows, results)
    return rows


def _search_rows(args) -> list[Row]:
    from gpualign_plugin.cli.common import apply_threads
    from gpualign_plugin.io.fasta import read_fasta
    from gpualign_plugin.search.api import search
    from gpualign_plugin.search.database import load_database

    if not (args.search_query and args.search_db):
        raise InputError("bench task 'search' needs --search-query and --search-db")
    scheme = ScoringScheme.from_matrix("BLOSUM62", 11, 1)
    threads = apply_threads(args.threads)
    queries = read_fasta(args.search_query, scheme)
    database = load_database(args.search_db, scheme)
    residues = database.residues
    cells = sum(len(q) for q in queries) * residues
    rows, results = [], {}
    for backend, device in _backends(args):
        options = {"backend": backend, "device": args.device}
        warmup = functools.partial(search, queries[:2], database, scheme, residues, len(database),
                                   span=(0, min(100, len(database))), **options)
        seconds, result = _time(lambda: search(queries, database, scheme, residues, len(database),
                                               **options), args.repeat, warmup)
        results[backend] = [(hit.query_index, hit.target_index, hit.alignment) for hit in result.hits]
        if backend == "cpu":
            device = f"{device}, {threads} threads"
        rows.append(Row("search (top 10, aligned)", backend, device, f"{len(queries)} q x {len(database)} db",
                        seconds, cells, _gpu_memory(backend), f"{len(result.hits)} hits, {residues} db residues"))
    _agreement(rows, results)
    return rows


def format_table(rows: list[Row]) -> str:
    """The rows as an aligned text table, machine description first."""
    header = ["task", "engine", "size", "seconds", "Gcells/s", "memory", "result", "agrees"]
    lines = [[r.task, r.engine, r.size, f"{r.seconds:.4f}", f"{r.gcups:.3f}", r.memory, r.result, r.agrees]
             for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *lines)]
    out = [f"# machine: {platform.node()}; CPU: {cpu_description()}; Python {platform.python_version()}"]
    for name in dict.fromkeys(f"{r.engine}: {r.device}" for r in rows):
        out.append(f"# {name}")
    out.append("# cells: m*n for pairwise, syntenic and search (GCUPS); (L+1)^3 for align3; "
               "split-point updates for fold")
    for line in [header] + lines:
        out.append("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign bench`` and print the table on stdout."""
    if args.repeat < 1:
        raise InputError("--repeat must be at least 1")
    if not 0 <= args.divergence <= 1:
        raise InputError(f"--divergence is a rate between 0 and 1, got {args.divergence}")
    rows = bench_rows(args)
    print(format_table(rows))
    sys.stdout.flush()
    return 0 if all(r.agrees != "NO" for r in rows) else 1
