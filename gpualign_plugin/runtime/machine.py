"""A description of the machine a measurement ran on (for bench tables and run statistics)."""

from __future__ import annotations

import os
import platform


def cpu_description() -> str:
    """CPU model name and the number of cores this process may use, e.g. ``'AMD EPYC 9654 (2 cores)'``."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model} ({cores} cores)"
