"""Shared fixtures: GPU tests skip cleanly where no usable GPU is present, tests that run an
external tool (``@pytest.mark.tools("samtools")``) where that tool is not installed."""

from __future__ import annotations

import os
import shutil

import pytest


def _gpu_reason() -> str:
    from gpualign_plugin.runtime.gpu import probe

    status = probe(0)
    return "" if status.usable else status.reason


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            if reason is None:
                reason = _gpu_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"no usable GPU: {reason}"))
        for marker in item.iter_markers("tools"):
            missing = [name for name in marker.args if shutil.which(name) is None]
            if missing:
                item.add_marker(pytest.mark.skip(reason=f"not installed: {', '.join(missing)}"))


@pytest.fixture(scope="session")
def data_dir():
    """Folder of the test data files shipped with the tests."""
    return os.path.join(os.path.dirname(__file__), "data")
