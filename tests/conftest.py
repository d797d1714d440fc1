"""Shared fixtures: GPU tests skip cleanly where no usable GPU is present."""

from __future__ import annotations

import os

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


@pytest.fixture(scope="session")
def data_dir():
    """Folder of the test data files shipped with the tests."""
    return os.path.join(os.path.dirname(__file__), "data")
