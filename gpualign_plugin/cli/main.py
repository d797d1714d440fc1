"""Entry point of the ``gpualign`` command: parses arguments and dispatches to a subcommand.

Every subcommand module exposes ``register(subparsers)``, which adds its parser
and sets ``run`` (a function of the parsed arguments returning an exit status).
Bad input (:class:`~gpualign_plugin.errors.InputError`), an unusable backend and
work too large for the GPU's memory become one line on stderr and exit status 2;
a failed CUDA kernel becomes one line and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading

from gpualign_plugin.errors import BackendUnavailable, InputError
from gpualign_plugin.io.atomic import check_writable
from gpualign_plugin.io.spool import spooled_inputs
from gpualign_plugin.runtime.gpu_slot import take_gpu_slot
from gpualign_plugin.runtime.kernels import GpuKernelError, GpuMemoryError
from gpualign_plugin.version import __version__

SUBCOMMANDS = (
    "pairwise",
    "bench",
    "simulate",
    "search",
    "makedb",
    "merge_hits",
    "batch",
    "split",
    "merge_alignments",
    "align3",
    "fold",
    "syntenic",
    "compare",
    "triplets",
    "best_pairs",
)

EPILOG = """examples:
  gpualign pairwise --query contigs.fa --target genome.fa --out contigs.bam --mode semiglobal
  gpualign pairwise -q a.fa -t b.fa --out a_vs_b.paf --mode local --strand both
  gpualign bench --sizes 20000x20000
run 'gpualign SUBCOMMAND --help' for the options of each."""


#: Command names that are not their module's name with ``-`` for ``_``.
ALIASES = {"genome-summary": "compare"}
#: Global options taking a value (they may stand before the subcommand).
VALUED_OPTIONS = ("--local-gpus", "--gpu-lock-dir")


def chosen_subcommand(argv: list[str]) -> str | None:
    """The module name of the subcommand ``argv`` names, or None (none named, help, or unknown).

    Only the first word that is not a global option counts, as for argparse.
    """
    words = iter(argv)
    for word in words:
        if word in VALUED_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            name = ALIASES.get(word, word.replace("-", "_"))
            return name if name in SUBCOMMANDS else None
    return None


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors (a missing or malformed option) are one line, as every
    other error of ``gpualign`` is, with exit status 2; the usage is one ``--help`` away.
    ``add_subparsers`` makes the subcommands' parsers of this class too."""

    def error(self, message: str):
        self.exit(2, f"gpualign: error: {message} (see '{self.prog} --help')\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or only the module ``only``.

    A run registers only its own subcommand, so it imports no other command's modules
    (the syntenic command alone loads Numba and SciPy at import).
    """
    parser = OneLineErrorParser(
        prog="gpualign", description="Exact dynamic-programming sequence alignment on GPUs and CPUs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpualign {__version__}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for name in (only,) if only else SUBCOMMANDS:
        importlib.import_module(f"gpualign_plugin.cli.{name}").register(subparsers)
    for subparser in {id(p): p for p in subparsers.choices.values()}.values():
        add_global_options(subparser, in_subcommand=True)
    return parser


def add_global_options(parser: argparse.ArgumentParser, in_subcommand: bool = False) -> None:
    """Add the options that may stand before or after the subcommand (``-v``, GPU slots).

    On a subcommand's parser they default to ``argparse.SUPPRESS``, so a value given
    before the subcommand is kept unless the same option is given again after it.
    """
    def default(value):
        return argparse.SUPPRESS if in_subcommand else value

    group = parser.add_argument_group("global options (before or after the subcommand)")
    group.add_argument("-v", "--verbose", action="store_true", default=default(False),
                       help="log more detail on stderr")
    group.add_argument("--local-gpus", type=int, default=default(1), metavar="N",
                       help="with N > 1 GPUs on this machine, take the first free one for this "
                            "run (a lock file per device in --gpu-lock-dir) and use only it [1]")
    group.add_argument("--gpu-lock-dir", default=default(".gpu-slots"), metavar="DIR",
                       help="where the --local-gpus lock files live [.gpu-slots]")


def main(argv: list[str] | None = None) -> int:
    """Run ``gpualign`` with ``argv``; returns the exit status.

    Without ``argv`` (the ``gpualign`` command itself: ``sys.argv[1:]``) the process ends
    here through :func:`leave` instead of returning.
    """
    if argv is not None:
        return run(list(argv))
    leave(run(sys.argv[1:]))


def leave(status: int) -> None:
    """End the process with ``status`` at once, once its output is out.

    Flushes stdout, stderr and the log, then calls ``os._exit``: the interpreter's teardown
    (module finalisers, CuPy freeing its memory pool and the CUDA context, Numba's) is
    skipped: after a CPU search on the 2-core development machine the process outlived the
    command by 0.22 s before, 0.01 s with this; after a GPU search on an H100, by about 0.45 s
    before (not yet measured with this). Every output
    file is complete, closed and renamed before this, and every thread pool of the commands
    is joined where it is used (context managers); threads still running here (the heartbeat,
    a checksum check whose answer was not needed because the command failed) end with the
    process. Threads are not joined: an idle pool worker left unjoined would wait forever.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can go out
            pass
    os._exit(status)


def run(argv: list[str]) -> int:
    """Parse ``argv`` and run the subcommand; the exit status (errors become one line and 2 or 1)."""
    parser = build_parser(chosen_subcommand(argv))
    args = parser.parse_args(argv)
    args.argv = argv
    # Only our logger follows -v: the libraries' debug lines (matplotlib's font search,
    # Numba, CuPy) stay out of the user's log.
    logging.basicConfig(level=logging.WARNING, format="gpualign: %(message)s", stream=sys.stderr)
    logging.getLogger("gpualign").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if args.subcommand is None:
        parser.print_help()
        return 2
    # The device's lock lasts as long as the file in args.gpu_slot stays open: this whole run.
    args.gpu_slot = take_gpu_slot(args.local_gpus, args.gpu_lock_dir)
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main_thread else None
    try:
        if getattr(args, "stats", None):
            # --stats (add_compute_options) is written last: check it before the work starts.
            check_writable(args.stats)
        with spooled_inputs(args):
            return int(args.run(args) or 0)
    except (InputError, BackendUnavailable, GpuMemoryError) as exc:
        print(f"gpualign: error: {exc}", file=sys.stderr)
        return 2
    except GpuKernelError as exc:
        print(f"gpualign: GPU failure: {exc}", file=sys.stderr)
        return 1
    except Terminated:
        print("gpualign: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("gpualign: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of an output stream went away (`... --out /dev/stdout | head`): end quietly,
        # with the status of a process that SIGPIPE ended, as other command-line tools do.
        return 128 + signal.SIGPIPE
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM, which a batch scheduler sends to cancel a job or end one past its time limit.

    Raised where SIGINT raises ``KeyboardInterrupt`` (a subclass of it), so that the same
    clean-up runs: partial outputs are removed and nothing half-written is left."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


if __name__ == "__main__":
    sys.exit(main())
