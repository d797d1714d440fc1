#!/usr/bin/env python3
"""Time the GPU batch and fold engines on the issue's workloads, the CPU beside them, checking agreement.

Usage (on a GPU machine, from the checkout): ``python3 scripts/time-batch-fold.py [--quick]``.
Prints one line per measurement: workload, engine, seconds (median), rate, agreement with
the CPU engine on the same input (all of it, or the stated subset).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, ".")

from gpualign_plugin.batch import gpu as batch_gpu  # noqa: E402
from gpualign_plugin.batch.api import align_batch, align_batch_gpu  # noqa: E402
from gpualign_plugin.cli.bench import related_pair  # noqa: E402
from gpualign_plugin.fold.api import fold, fold_cells, fold_many  # noqa: E402
from gpualign_plugin.runtime.gpu import probe  # noqa: E402
from gpualign_plugin.scoring import ScoringScheme  # noqa: E402


def timed(function, repeat, warmup=None):
    (warmup or function)()
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def read_like_pairs(count, rng):
    """``count`` pairs of 150-300 bp: a read and its template with 2% substitutions and 0.2% indels."""
    lengths = rng.integers(150, 301, count)
    bases = rng.integers(0, 4, (count, 310), dtype=np.uint8)
    reads = bases.copy()
    flips = rng.random(reads.shape) < 0.02
    reads[flips] = (reads[flips] + 1) % 4
    pairs = []
    for k in range(count):
        n = int(lengths[k])
        read = reads[k, :n]
        if rng.random() < 0.2:  # one indel in a fifth of the reads
            cut = int(rng.integers(10, n - 10))
            read = np.concatenate([read[:cut], read[cut + 2:]]) if rng.random() < 0.5 else \
                np.concatenate([read[:cut], bases[k, 300:302], read[cut:]])
        pairs.append((read, bases[k, :n + 5]))
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reads", type=int, default=1_000_000)
    args = parser.parse_args()
    print("device:", probe(0).name, flush=True)
    scheme = ScoringScheme.dna()
    bench_scheme = ScoringScheme.dna(1, -3, 3, 2)
    repeat = 3 if args.quick else 5

    pairs = [related_pair(512, 512, 0.02, 1 + k) for k in range(1000)]
    cells = 1000 * 512 * 512
    for mode in ("local", "global", "semiglobal"):
        gpu_s, gpu_r = timed(lambda: align_batch_gpu(pairs, bench_scheme, mode), repeat)
        kernel = []
        for _ in range(repeat):
            profile: dict = {}
            batch_gpu.align_batch(pairs, bench_scheme, mode, profile=profile)
            kernel.append(profile["kernel_seconds"])
        k = statistics.median(kernel)
        start = time.perf_counter()
        cpu_r = align_batch(pairs, bench_scheme, mode)
        cpu_s = time.perf_counter() - start
        print(f"batch 1000x512^2 {mode}: gpu end-to-end {gpu_s * 1e3:.1f} ms ({cells / gpu_s / 1e9:.0f} GCUPS), "
              f"kernel {k * 1e3:.3f} ms ({cells / k / 1e9:.0f} GCUPS); cpu {cpu_s * 1e3:.0f} ms "
              f"({cells / cpu_s / 1e9:.2f} GCUPS); agrees {gpu_r == cpu_r}", flush=True)

    rng = np.random.default_rng(5)
    reads = read_like_pairs(args.reads if not args.quick else 100_000, rng)
    read_cells = sum(len(q) * len(t) for q, t in reads)
    gpu_s, gpu_r = timed(lambda: align_batch_gpu(reads, scheme, "semiglobal"), 1,
                         lambda: align_batch_gpu(reads[:1000], scheme, "semiglobal"))
    profile = {}
    batch_gpu.align_batch(reads, scheme, "semiglobal", profile=profile)
    subset = 20_000
    start = time.perf_counter()
    cpu_r = align_batch(reads[:subset], scheme, "semiglobal")
    cpu_s = time.perf_counter() - start
    sub_cells = sum(len(q) * len(t) for q, t in reads[:subset])
    print(f"batch {len(reads)} read-like pairs 150-300 bp semiglobal: gpu end-to-end {gpu_s:.2f} s "
          f"({read_cells / gpu_s / 1e9:.0f} GCUPS), kernel {profile['kernel_seconds']:.3f} s "
          f"({read_cells / profile['kernel_seconds'] / 1e9:.0f} GCUPS, {profile['launches']} launches); "
          f"cpu on the first {subset}: {cpu_s:.2f} s ({sub_cells / cpu_s / 1e9:.2f} GCUPS); "
          f"agrees on them {gpu_r[:subset] == cpu_r}", flush=True)

    text = "".join(rng.choice(list("ACGU"), 2000))
    gpu_s, gpu_r = timed(lambda: fold(text, backend="gpu"), repeat)
    start = time.perf_counter()
    cpu_r = fold(text)
    cpu_s = time.perf_counter() - start
    print(f"fold n=2000: gpu {gpu_s * 1e3:.1f} ms, cpu {cpu_s * 1e3:.0f} ms, agrees {gpu_r == cpu_r}, "
          f"{gpu_r.score} pairs", flush=True)

    many = ["".join(rng.choice(list("ACGU"), 500)) for _ in range(1000)]
    gpu_s, gpu_r = timed(lambda: fold_many(many, backend="gpu"), repeat)
    start = time.perf_counter()
    cpu_r = fold_many(many)
    cpu_s = time.perf_counter() - start
    print(f"fold 1000 x 500 nt: gpu {gpu_s:.3f} s, cpu {cpu_s:.2f} s, agrees {gpu_r == cpu_r}", flush=True)

    for n in ((8000,) if args.quick else (8000, 26000)):
        text = "".join(np.random.default_rng(n).choice(list("ACGU"), n))
        gpu_s, gpu_r = timed(lambda: fold(text, backend="gpu"), 2 if n > 10000 else repeat)
        line = (f"fold n={n}: gpu {gpu_s:.3f} s ({fold_cells(n) / gpu_s / 1e9:.0f} G updates/s), "
                f"{gpu_r.score} pairs, structure sha1 {hashlib.sha1(gpu_r.structure.encode()).hexdigest()[:12]}")
        if n <= 8000:
            start = time.perf_counter()
            cpu_r = fold(text)
            cpu_s = time.perf_counter() - start
            line += f"; cpu {cpu_s:.2f} s, agrees {gpu_r == cpu_r}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
