"""Loading the CUDA kernels, launching them safely, and checking GPU memory before a launch.

The kernel sources are package data beside the Python that launches them
(``pairwise/striped.cu``, ``search/search.cu``, ...), with the device code they share in
``runtime/*.cuh``. Each family is
compiled once per process and device architecture through ``cupy.RawModule``; CuPy
keeps the binaries in its disk cache (``CUPY_CACHE_DIR``), whose key is the source
text and the options, so the headers are pasted into the source before compiling
(an edited header then gives a new key instead of a stale binary).

Options come from the device: ``-DGPUALIGN_DPX=1`` on compute capability 9.0 and
newer selects Hopper's DPX instructions (three-way maxima in one instruction);
CuPy adds the ``-arch`` of the current device itself.

Every launch goes through :func:`launch`, which synchronises and turns a CUDA
error into :class:`GpuKernelError` naming the kernel and the sizes it was given.
:func:`check_memory` compares a size estimate with the free device memory before
any allocation, so an input too large for the card gives :class:`GpuMemoryError`
with the numbers instead of a crash. :func:`pinned_bytes` is the page-locked host buffer
the engines copy direction bytes into.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

import numpy as np

PACKAGE = "gpualign_plugin"
HEADER_DIR = "runtime"
"""Folder (in the package) of the shared device headers that ``#include "x.cuh"`` names."""


class GpuKernelError(RuntimeError):
    """A CUDA kernel failed; the message names the kernel and its sizes."""


class GpuMemoryError(MemoryError):
    """The work does not fit in the GPU's free memory; the message gives both numbers."""


def _source(name: str) -> str:
    """Text of the package file ``NAME`` (e.g. ``pairwise/striped.cu``) with its headers pasted in.

    Each ``#include "x.cuh"`` line is replaced by the text of ``runtime/x.cuh``.
    """
    package = resources.files(PACKAGE)
    text = package.joinpath(name).read_text()

    def paste(match: re.Match) -> str:
        return package.joinpath(HEADER_DIR, match.group(1)).read_text()

    return re.sub(r'^#include "([A-Za-z0-9_]+\.cuh)"\s*$', paste, text, flags=re.MULTILINE)


def compile_options(compute_capability: tuple) -> tuple:
    """NVRTC options for a device of ``compute_capability`` ``(major, minor)``."""
    dpx = 1 if tuple(compute_capability) >= (9, 0) else 0
    return ("-std=c++17", f"-DGPUALIGN_DPX={dpx}")


@functools.lru_cache(maxsize=None)
def _module(source: str, compute_capability: tuple, template: str | None):
    import cupy

    return cupy.RawModule(code=_source(source), options=compile_options(compute_capability),
                          name_expressions=(template,) if template else ())


def get_kernel(device: int, source: str, name: str, compute_capability: tuple | None = None):
    """The compiled kernel ``name`` (a template instance or an ``extern "C"`` kernel) of the package
    file ``source`` for ``device``.

    Each template instance is compiled on first use, once per process (and found in CuPy's
    disk cache after that), so a run pays only for the variants it launches; the ``extern "C"``
    kernels of a file share one module, loaded once (a search runs four of them).
    ``compute_capability`` overrides the device's for the choice of options (the
    benchmarks build the non-DPX variant on a Hopper GPU this way).
    """
    from gpualign_plugin.runtime.gpu import probe

    capability = compute_capability or probe(device).compute_capability
    template = name if "<" in name else None
    return _module(source, tuple(capability), template).get_function(name)


def resident_blocks(kernel, threads: int, shared_bytes: int, device: int) -> int:
    """Blocks of ``threads`` threads that fit on the whole device at once (persistent grid size)."""
    import cupy

    from gpualign_plugin.runtime.gpu import probe

    try:
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            kernel.ptr, threads, shared_bytes)
    except Exception:  # older CuPy without the occupancy call: estimate from registers
        per_sm = max(1, min(65536 // max(1, kernel.num_regs * threads), 2048 // threads))
    return max(1, int(per_sm)) * probe(device).multiprocessors


def launch(kernel, name: str, grid: int, block: int, args: tuple, shared_bytes: int, sizes: str,
           sync: bool = True) -> None:
    """Launch ``kernel`` on the current stream; a CUDA error becomes :class:`GpuKernelError`.

    With ``sync`` (the default) wait for it, so that an error inside the kernel is
    reported here; otherwise the caller reports it through :func:`synchronize`.
    ``name`` and ``sizes`` (e.g. ``'rectangle 4096 x 4096, 16 strips'``) go into the message.
    """
    import cupy

    try:
        kernel((grid,), (block,), args, shared_mem=shared_bytes)
        if sync:
            cupy.cuda.get_current_stream().synchronize()
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise GpuKernelError(f"CUDA kernel {name} failed on {sizes} "
                             f"(grid {grid} x {block} threads, {shared_bytes} B shared): {exc}") from exc


def synchronize(what: str) -> None:
    """Wait for all work on the current device; a CUDA error becomes :class:`GpuKernelError` naming ``what``."""
    import cupy

    try:
        cupy.cuda.Device().synchronize()
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise GpuKernelError(f"CUDA kernels failed while {what}: {exc}") from exc


def pinned_bytes(size: int) -> np.ndarray:
    """A ``uint8`` host array of ``size`` bytes in page-locked memory (fast device-to-host copies)."""
    import cupy

    return np.frombuffer(cupy.cuda.alloc_pinned_memory(size), dtype=np.uint8, count=size)


UPLOAD_CHUNK = 16 << 20
"""Bytes a staging buffer of :func:`upload` holds."""


def upload(array: np.ndarray):
    """``array`` (C-contiguous, any dtype and shape; a memory map too) as a CuPy array on the
    current device, copied through two page-locked staging buffers of :data:`UPLOAD_CHUNK`
    bytes in turn, so that reading the next chunk overlaps copying this one.

    ``cupy.asarray`` copies from pageable memory through the driver's own staging: 0.15 s for
    a search database's 181 MB of codes (memory-mapped) on an H200, against 0.045 s this way.
    """
    import cupy

    flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    out = cupy.empty(array.shape, dtype=array.dtype)
    target = out.reshape(-1).view(cupy.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    buffers = [pinned_bytes(min(UPLOAD_CHUNK, max(flat.size, 1))) for _ in range(2)]
    copied = [None, None]
    for k, start in enumerate(range(0, flat.size, UPLOAD_CHUNK)):
        which = k % 2
        if copied[which] is not None:
            copied[which].synchronize()  # the buffer's previous copy is done
        size = min(UPLOAD_CHUNK, flat.size - start)
        staged = buffers[which][:size]
        staged[:] = flat[start:start + size]
        target[start:start + size].set(staged, stream=stream)
        copied[which] = stream.record()
    stream.synchronize()
    return out


def free_bytes() -> int:
    """Device memory available to new allocations: the driver's free memory plus CuPy's pooled blocks."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free) + int(cupy.get_default_memory_pool().free_bytes())


def check_memory(needed: int, what: str) -> None:
    """Raise :class:`GpuMemoryError` when ``needed`` bytes exceed the free device memory."""
    available = free_bytes()
    if needed > available:
        raise GpuMemoryError(f"{what} needs {needed / 2**20:.0f} MiB of GPU memory but only "
                             f"{available / 2**20:.0f} MiB is free")
