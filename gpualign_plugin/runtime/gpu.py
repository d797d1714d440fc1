"""GPU discovery: is CuPy importable, is a device present, which one, how much memory.

Nothing here raises when there is no GPU; :func:`probe` says why instead.
CUDA_VISIBLE_DEVICES, as a scheduler sets it, is respected because CuPy numbers
only the devices it leaves visible.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuStatus:
    """What :func:`probe` found.

    Attributes
    ----------
    usable : bool
        A device can run the GPU engines.
    reason : str
        Why not, when ``usable`` is false; empty otherwise.
    device : int
        The CUDA device ordinal probed (after CUDA_VISIBLE_DEVICES).
    name : str
        Device name, e.g. ``'NVIDIA H200'``.
    memory_bytes : int
        Total device memory in bytes.
    compute_capability : tuple of int
        ``(major, minor)``.
    multiprocessors : int
        Streaming multiprocessor count.
    """

    usable: bool
    reason: str = ""
    device: int = 0
    name: str = ""
    memory_bytes: int = 0
    compute_capability: tuple = (0, 0)
    multiprocessors: int = 0


@functools.lru_cache(maxsize=None)
def probe(device: int = 0) -> GpuStatus:
    """Find out whether CUDA device ``device`` can be used through CuPy."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CuPy that finds no CUDA libraries
        return GpuStatus(False, f"CuPy is not importable ({type(exc).__name__}: {exc}); "
                                "install gpualign[cuda12] or gpualign[cuda13]", device)
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return GpuStatus(False, f"no CUDA driver or device ({exc})", device)
    if count == 0:
        return GpuStatus(False, "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)", device)
    if not 0 <= device < count:
        return GpuStatus(False, f"device {device} does not exist ({count} visible)", device)
    try:
        props = cupy.cuda.runtime.getDeviceProperties(device)
    except Exception as exc:
        return GpuStatus(False, f"device {device} cannot be queried ({exc})", device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return GpuStatus(True, "", device, name, int(props["totalGlobalMem"]),
                     (int(props["major"]), int(props["minor"])), int(props["multiProcessorCount"]))


def peak_memory_bytes() -> int:
    """GPU memory held by CuPy's default memory pool, in bytes (0 without CuPy).

    The pool keeps freed blocks for reuse and gpualign never empties it during a
    run, so at the end of a run this is the run's peak device allocation.
    """
    try:
        import cupy
    except Exception:
        return 0
    return int(cupy.get_default_memory_pool().total_bytes())
