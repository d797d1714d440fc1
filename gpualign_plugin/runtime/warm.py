"""Loading host code (Numba kernels, modules) in the background while the host waits for the GPU.

The first Numba call of a process pays Numba's start-up (its CPU target, SciPy's BLAS check
behind it: about 0.5 s on the GPU machines, seconds on a loaded host) even when the compiled
function is in Numba's disk cache; importing Numba costs about 0.3 s more. A GPU engine whose
host code needs Numba after a long device pass starts it here before the pass, on a daemon
thread (a kernel with arguments of the types it will pass later): the start-up then happens
while the main thread only waits for the GPU (CuPy releases the GIL while it synchronises).
(CuPy's first elementwise operation or reduction of a process imports cupyx, 0.43 s; the
search and batch engines do their small device steps in their own kernels instead.)
"""

from __future__ import annotations

import threading


def load_in_background(name: str, function, *args) -> threading.Thread:
    """Call ``function(*args)`` on a started daemon thread named ``gpualign-warm-NAME``; the thread."""
    thread = threading.Thread(target=function, args=args, daemon=True, name=f"gpualign-warm-{name}")
    thread.start()
    return thread
