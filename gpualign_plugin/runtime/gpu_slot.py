"""Taking a free local GPU for the life of this process (``gpualign --local-gpus N``).

A workflow on one machine with several GPUs runs each alignment job as
``gpualign --local-gpus N --gpu-lock-dir DIR SUBCOMMAND ...``. The job takes the first
device ``I`` whose lock file ``DIR/gpuI.lock`` it can lock exclusively (``flock``), holds
the lock until it exits, and sees only that device (``CUDA_VISIBLE_DEVICES`` is set to
``I``, or to the ``I``-th entry of an existing ``CUDA_VISIBLE_DEVICES`` list), so device 0
of the job is its own GPU. Snakemake's ``--resources gpu=N`` keeps at most ``N`` such jobs
running, so a device is free within a moment. With ``N <= 1``, or inside a SLURM job
(SLURM sets ``CUDA_VISIBLE_DEVICES`` to the GPU it granted), nothing changes.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from typing import IO, MutableMapping

log = logging.getLogger("gpualign")

#: Seconds between rounds over the lock files while every device is taken.
POLL_SECONDS = 1.0


def take_gpu_slot(count: int, lock_dir: str,
                  environ: MutableMapping[str, str] = os.environ) -> tuple[str, IO] | None:
    """Lock a free device out of ``count`` and point ``environ['CUDA_VISIBLE_DEVICES']`` at it.

    Waits while all ``count`` devices are locked. Returns ``(device, handle)``: the device
    as written to ``CUDA_VISIBLE_DEVICES`` and the open lock file, whose lock lasts as long
    as the handle stays open (keep it for the life of the process). Returns ``None``, and
    changes nothing, when ``count <= 1`` or ``SLURM_JOB_ID`` is set.
    """
    if count <= 1 or environ.get("SLURM_JOB_ID"):
        return None
    visible = [entry for entry in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if entry]
    os.makedirs(lock_dir, exist_ok=True)
    while True:
        for index in range(count):
            handle = open(os.path.join(lock_dir, f"gpu{index}.lock"), "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            device = visible[index] if index < len(visible) else str(index)
            environ["CUDA_VISIBLE_DEVICES"] = device
            log.debug("took GPU slot %d of %d: CUDA_VISIBLE_DEVICES=%s", index, count, device)
            return device, handle
        time.sleep(POLL_SECONDS)
