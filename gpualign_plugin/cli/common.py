"""Options, error handling, progress and run statistics shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field

from gpualign_plugin.errors import InputError
from gpualign_plugin.runtime.backend import BACKENDS
from gpualign_plugin.scoring import DNA_LETTERS, ScoringScheme, default_gaps, looks_like_nucleotide


def add_scoring_options(parser: argparse.ArgumentParser, default_kind: str) -> None:
    """Add ``--matrix``, ``--match/--mismatch/--ambiguity`` and ``--gap-open/--gap-extend``.

    ``default_kind`` is ``'dna'`` (match/mismatch 2/-3, gaps 5+2k) or ``'protein'``
    (BLOSUM62, gaps 11+1k) and picks the defaults shown in ``--help``.
    """
    group = parser.add_argument_group("scoring (a gap of length k costs OPEN + k*EXTEND)")
    group.add_argument("--matrix", metavar="NAME",
                       help="substitution matrix from Biopython (BLOSUM62, PAM30, NUC.4.4, ...)"
                            + (" [default: BLOSUM62]" if default_kind == "protein" else ""))
    group.add_argument("--match", type=int, metavar="N", help="DNA match score [2]")
    group.add_argument("--mismatch", type=int, metavar="N", help="DNA mismatch score [-3]")
    group.add_argument("--ambiguity", type=int, default=-1, metavar="N",
                       help="score of a pair involving N or another IUPAC ambiguity code [-1]")
    group.add_argument("--gap-open", type=int, metavar="N",
                       help="gap open cost [5 for DNA; for a protein matrix blastp's default for it: "
                            "11 for BLOSUM62, 14 for BLOSUM45 and PAM250, 13 for BLOSUM50, 10 for "
                            "BLOSUM90 and PAM70, 9 for PAM30, else 11]")
    group.add_argument("--gap-extend", type=int, metavar="N",
                       help="gap extend cost per column [2 for DNA; for a protein matrix blastp's "
                            "default: 2 for BLOSUM45, BLOSUM50 and PAM250, else 1]")
    parser.set_defaults(scoring_default_kind=default_kind)


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """``number`` and the noun agreeing with it: ``counted(1, "query", "queries")`` is ``'1 query'``."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def sequence_kind(text: str) -> str:
    """``'dna'`` or ``'protein'``: what the residues of ``text`` look like.

    DNA when every letter is a DNA letter (IUPAC codes and ``U`` included) or
    :func:`~gpualign_plugin.scoring.looks_like_nucleotide` says so; protein otherwise.
    """
    letters = {c for c in set(text.upper()) if c.isalpha()}
    if letters <= set(DNA_LETTERS + "U") or looks_like_nucleotide(text):
        return "dna"
    return "protein"


KIND_SAMPLE = 100_000
"""Residues of a file's first records that :func:`detected_kind` judges."""
KIND_RECORDS = 1_000
"""Most records of a file that :func:`detected_kind` reads."""


def check_prefix(prefix: str, option: str) -> None:
    """Refuse an output path prefix that ends in a folder separator (``results/``): its files
    would be hidden ones such as ``results/.bam``.

    Raises
    ------
    InputError
        Naming ``option`` and a prefix that would do.
    """
    if not os.path.basename(prefix):
        raise InputError(f"{option} {prefix!r} ends in a folder; give a file name prefix, "
                         f"such as {os.path.join(prefix, 'out')!r}")


def detected_kind(paths) -> str | None:
    """The kind (``'dna'``/``'protein'``) the first records of every FASTA in ``paths`` agree on.

    Each file is judged on its first records together (up to :data:`KIND_SAMPLE` residues
    or :data:`KIND_RECORDS` records), so that one Gly/Ala-rich protein at the top of a
    protein database does not make it DNA. A path that is not a readable FASTA file here (a
    prepared search database, a missing file: reading it later gives the proper error) is
    passed over. ``None`` when the files disagree or none could be read.
    """
    from gpualign_plugin.io.fasta import iter_fasta_text

    kinds = set()
    for path in paths:
        sample, size = [], 0
        try:
            for _, _, text in iter_fasta_text(path):
                sample.append(text[:KIND_SAMPLE - size])
                size += len(sample[-1])
                if size >= KIND_SAMPLE or len(sample) >= KIND_RECORDS:
                    break
        except (InputError, OSError, UnicodeDecodeError, zlib.error):
            pass  # judged on the records before the error, if any; reading it later words the error
        if sample:
            kinds.add(sequence_kind("".join(sample)))
    return kinds.pop() if len(kinds) == 1 else None


def scheme_from_args(args: argparse.Namespace, inputs=()) -> ScoringScheme:
    """Build the :class:`ScoringScheme` the scoring options describe.

    Without ``--matrix`` and ``--match/--mismatch``, the defaults follow the sequences:
    when the first records of every FASTA file in ``inputs`` look like protein (or every
    file's like DNA, :func:`detected_kind`) and the subcommand's own default is the other kind, the defaults of that
    kind are used (BLOSUM62, gaps 11+k; or match 2, mismatch -3, gaps 5+2k) and one log
    line says so. A protein ``--matrix`` without gap options takes blastp's default gap costs
    for it (:func:`~gpualign_plugin.scoring.default_gaps`).
    """
    dna_options = args.match is not None or args.mismatch is not None
    if args.matrix and dna_options:
        raise InputError("give either --matrix or --match/--mismatch, not both")
    kind = args.scoring_default_kind
    if not args.matrix and not dna_options and inputs:
        detected = detected_kind(inputs)
        if detected is not None and detected != kind:
            kind = detected
            chosen = ("BLOSUM62, gap open 11, extend 1" if kind == "protein"
                      else "match 2, mismatch -3, gap open 5, extend 2")
            logging.getLogger("gpualign").info(
                "the sequences look like %s: scoring with %s (--matrix or --match/--mismatch "
                "choose otherwise)", "protein" if kind == "protein" else "DNA", chosen)
    use_matrix = args.matrix or (not dna_options and kind == "protein")
    if use_matrix:
        name = args.matrix or "BLOSUM62"
        probe = ScoringScheme.from_matrix(name, 11, 1)
        default_open, default_extend = default_gaps(name) if not probe.is_dna else (5, 2)
        return ScoringScheme.from_matrix(
            name,
            args.gap_open if args.gap_open is not None else default_open,
            args.gap_extend if args.gap_extend is not None else default_extend)
    return ScoringScheme.dna(
        match=args.match if args.match is not None else 2,
        mismatch=args.mismatch if args.mismatch is not None else -3,
        gap_open=args.gap_open if args.gap_open is not None else 5,
        gap_extend=args.gap_extend if args.gap_extend is not None else 2,
        ambiguity=args.ambiguity)


def output_formats(paths: list[str], forced: str | None, formats: dict[str, str]) -> list[tuple[str, str]]:
    """Pair each ``--out`` path with its format: ``forced`` (``--format``), else by its extension.

    ``formats`` maps each lower-case extension (``'.bam'``) to its format; an extension
    not in it raises :class:`InputError`, naming the path and the extensions known.
    """
    result = []
    for path in paths:
        extension = os.path.splitext(path)[1].lower()
        fmt = forced or formats.get(extension)
        if fmt is None:
            known = list(formats)
            raise InputError(f"cannot tell the output format from the extension {extension or '(none)'!r}; "
                             f"use {', '.join(known[:-1])} or {known[-1]}, or --format", path=path)
        result.append((path, fmt))
    return result


def add_compute_options(parser: argparse.ArgumentParser, gpu: bool = True) -> None:
    """Add ``--threads``, and with ``gpu`` also ``--backend`` and ``--device``."""
    group = parser.add_argument_group("compute")
    if gpu:
        group.add_argument("--backend", choices=BACKENDS, default="auto",
                           help="auto: the GPU if one is usable, else the CPU [auto]")
        group.add_argument("--device", type=int, default=0, metavar="N",
                           help="CUDA device ordinal, counted inside CUDA_VISIBLE_DEVICES [0]")
    group.add_argument("--threads", type=int, default=0, metavar="N",
                       help="CPU threads (0 = all cores) [0]")
    group.add_argument("--stats", metavar="JSON",
                       help="write run statistics (engine, device, cells, seconds, GCUPS) here")


_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def memory_size(text: str) -> int:
    """Bytes from ``'12G'``, ``'512M'``, ``'1.5GiB'``, ``'64k'`` or ``'1000000'`` (powers of 1024).

    Used as an argparse ``type``: a bad value is an ``ArgumentTypeError`` (exit 2).
    """
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = value[-1:] if value[-1:] in _SIZE_UNITS else ""
    try:
        size = float(value[:len(value) - len(unit)]) * _SIZE_UNITS[unit]
    except ValueError:
        size = -1
    if not size > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a memory size such as 12G, 512M or 1000000")
    return int(size)


def apply_threads(threads: int) -> int:
    """Set Numba's thread count from ``--threads`` (0 = all cores) and return it.

    Numba is not imported for this (its import costs about 0.3 s, which a GPU run pays on a
    background thread while the device works; docs/GPU.md, "Start-up"): before that import the
    count goes to ``NUMBA_NUM_THREADS``, the size Numba gives its thread pool when it loads.
    "All cores" are Numba's: ``NUMBA_NUM_THREADS`` if set, else the cores this process may use.
    """
    if threads < 0:
        raise InputError(f"--threads must be 0 or more, got {threads}")
    numba = sys.modules.get("numba")
    if numba is not None:
        available = numba.config.NUMBA_NUM_THREADS
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        available = int(os.environ.get("NUMBA_NUM_THREADS") or cores)
    count = available if threads == 0 else min(threads, available)
    if numba is not None:
        numba.set_num_threads(count)
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(count)
    return count


#: Environment variable: seconds between progress lines off a terminal (0 turns them off).
HEARTBEAT_VARIABLE = "GPUALIGN_HEARTBEAT_SECONDS"
DEFAULT_HEARTBEAT_SECONDS = 30.0


def heartbeat_seconds() -> float:
    """Seconds between heartbeat lines: ``$GPUALIGN_HEARTBEAT_SECONDS``, default 30, 0 = none."""
    text = os.environ.get(HEARTBEAT_VARIABLE, "")
    try:
        value = float(text) if text.strip() else DEFAULT_HEARTBEAT_SECONDS
    except ValueError:
        raise InputError(f"{HEARTBEAT_VARIABLE} must be a number of seconds, got {text!r}") from None
    if not value >= 0:
        raise InputError(f"{HEARTBEAT_VARIABLE} must be 0 or more, got {text!r}")
    return value


class Progress:
    """Progress of a long command on stderr, counted in ``unit`` (DP cells by default).

    On a terminal, a tqdm bar: percentage, units done, rate and time left. Elsewhere
    (Snakemake and SLURM logs) a background thread writes one timestamped line every
    :func:`heartbeat_seconds` with the same figures, so a log shows life and speed even
    while one long pair is computed and nothing advances. Use as a context manager; call
    :meth:`advance` (from any thread) with the units done.

    ``estimated``: ``total`` is an estimate the work may pass (a placement that finds more
    pieces than one, each re-scored and aligned); when it does, the total is raised to
    :data:`ESTIMATE_GROWTH` times the units done, so the bar falls back below 100% and the
    time left follows the rate, instead of resting full while work goes on. Otherwise the count
    stops at ``total``. Work in stages of different cost per unit calls :meth:`restart` as each
    later stage starts.
    """

    ESTIMATE_GROWTH = 1.25
    """Factor of the units done that an exceeded estimate is raised to."""

    def __init__(self, total: int, label: str, stream=None, unit: str = "cells", estimated: bool = False):
        self.total = max(int(total), 1)
        self.estimated = estimated
        self.label = label
        self.unit = unit
        self.done = 0
        self.stream = stream or sys.stderr
        self.on_terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = heartbeat_seconds()
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar = None
        self._thread = None

    def __enter__(self) -> "Progress":
        self.started = time.monotonic()
        if self.on_terminal:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.label, unit=f" {self.unit}", unit_scale=True,
                             file=self.stream, dynamic_ncols=True, mininterval=0.2, leave=True)
        elif self.interval > 0:
            self._thread = threading.Thread(target=self._beat, name="gpualign-heartbeat",
                                            daemon=True)
            self._thread.start()
        return self

    def advance(self, units: int = 1) -> None:
        """Add ``units`` of finished work."""
        with self._lock:
            units = int(units)
            if self.done + units > self.total:
                if self.estimated:
                    self.total = int((self.done + units) * self.ESTIMATE_GROWTH)
                    if self._bar is not None:
                        self._bar.total = self.total
                else:
                    units = self.total - self.done
            self.done += units
            if self._bar is not None and units > 0:
                self._bar.update(units)

    def restart(self, label: str, total: int) -> None:
        """Start the next stage of the work under ``label``: ``total`` units (an estimate when
        the bar's is), none done, its rate and time left measured from now."""
        with self._lock:
            self.label = label
            self.total = max(int(total), 1)
            self.done = 0
            self.started = time.monotonic()
            if self._bar is not None:
                self._bar.reset(total=self.total)
                self._bar.set_description(label)

    def heartbeat_line(self) -> str:
        """One line: UTC time, label, percentage, units done of the total, rate, time left."""
        from tqdm import tqdm

        elapsed = time.monotonic() - self.started
        with self._lock:
            done = self.done
        rate = done / elapsed if elapsed > 0 else 0.0
        left = f"about {tqdm.format_interval((self.total - done) / rate)} left" if rate > 0 else \
            "time left unknown"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return (f"{stamp} gpualign: {self.label}: {100.0 * done / self.total:.1f}% "
                f"({tqdm.format_sizeof(done)} of {tqdm.format_sizeof(self.total)} {self.unit}) "
                f"in {tqdm.format_interval(elapsed)}, {tqdm.format_sizeof(rate)} {self.unit}/s, {left}")

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self.stream.write(self.heartbeat_line() + "\n")
            self.stream.flush()

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            # Done: a total that was an estimate (cells of passes whose extent depends on the
            # answer) completes here.
            self.advance(self.total - self.done)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()


@dataclass
class RunStats:
    """Run statistics the workflow's report reads (``--stats FILE``, JSON).

    ``cells`` counts DP cells computed for the answer (m*n per pair, m*n*p for
    three sequences); ``gcups`` is cells / seconds / 1e9.
    """

    command: str
    engine: str = "cpu"
    device: str = ""
    cells: int = 0
    seconds: float = 0.0
    peak_gpu_memory_bytes: int = 0
    threads: int = 0
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self._started = time.perf_counter()

    def finish(self) -> None:
        """Stop the clock; on the GPU engine also record the peak GPU memory."""
        self.seconds = time.perf_counter() - self._started
        if self.engine == "gpu":
            from gpualign_plugin.runtime.gpu import peak_memory_bytes

            self.peak_gpu_memory_bytes = peak_memory_bytes()

    @property
    def gcups(self) -> float:
        """Giga cell updates per second."""
        return self.cells / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def write(self, path: str | None) -> None:
        """Write the statistics as JSON to ``path`` (atomically); nothing if ``path`` is None."""
        if not path:
            return
        from gpualign_plugin.io.atomic import atomic_text

        data = asdict(self)
        data["gcups"] = self.gcups
        with atomic_text(path) as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")


def seconds_since_process_start() -> float:
    """Wall seconds since this process started (Linux ``/proc``; 0.0 where unavailable).

    Includes the interpreter's start-up and every import before the command ran: what a
    user waits for beyond the command's own phases. Resolution: one clock tick (10 ms).
    """
    try:
        with open("/proc/self/stat") as handle:
            started = int(handle.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as handle:
            return max(0.0, float(handle.read().split()[0]) - started)
    except (OSError, ValueError, IndexError):
        return 0.0


def end_phases(phases: dict, started: float) -> dict:
    """Add ``total_s`` (seconds since ``started``, a ``time.perf_counter()`` taken when the
    command began) and ``process_start_to_run_s`` (the interpreter's start-up and imports
    before it, :func:`seconds_since_process_start`) to a ``--stats`` phase dict; returns it."""
    phases["total_s"] = time.perf_counter() - started
    phases["process_start_to_run_s"] = max(0.0, seconds_since_process_start() - phases["total_s"])
    return phases


def describe_device(engine: str, device: int = 0) -> str:
    """Human name of what ran: the GPU's name, or the CPU model and core count."""
    if engine == "gpu":
        from gpualign_plugin.runtime.gpu import probe

        return probe(device).name
    from gpualign_plugin.runtime.machine import cpu_description

    return cpu_description()


def command_line(args: argparse.Namespace | None = None) -> str:
    """The command line as typed (for @PG lines and output headers), quoted for a shell.

    ``args`` parsed by :func:`gpualign_plugin.cli.main.main` carry the argument
    list main() was given (which differs from ``sys.argv`` when main is called
    from Python); without them ``sys.argv`` is used. An argument with a space or another
    shell character is quoted, so ``shlex.split`` gives the arguments back.
    """
    argv = getattr(args, "argv", None)
    if argv is None:
        argv = sys.argv[1:]
    return shlex.join(["gpualign"] + list(argv))
