"""Choosing the compute backend: ``auto`` (GPU if usable, else CPU), ``cpu`` or ``gpu``."""

from __future__ import annotations

import logging

from gpualign_plugin.errors import BackendUnavailable

log = logging.getLogger("gpualign")

BACKENDS = ("auto", "cpu", "gpu")


def resolve_backend(requested: str = "auto", device: int = 0) -> str:
    """Return ``'cpu'`` or ``'gpu'`` for the ``requested`` backend.

    ``auto`` falls back to the CPU with one log line saying why; ``gpu`` raises
    :class:`~gpualign_plugin.errors.BackendUnavailable` with the reason when no
    usable GPU is present.
    """
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {requested!r}")
    if requested == "cpu":
        return "cpu"
    from gpualign_plugin.runtime.gpu import probe

    status = probe(device)
    if status.usable:
        return "gpu"
    if requested == "gpu":
        raise BackendUnavailable(f"--backend gpu: {status.reason}")
    log.info("no usable GPU (%s); running on the CPU", status.reason)
    return "cpu"
