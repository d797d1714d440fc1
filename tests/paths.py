"""Folders the tests read from, wherever a test file sits in the tree that mirrors the package."""

import os

TESTS = os.path.dirname(os.path.abspath(__file__))
"""This folder (``tests/``)."""

REPO = os.path.dirname(TESTS)
"""The repository's checkout."""

DATA = os.path.join(TESTS, "data")
"""Small real inputs kept with the tests (globins, search queries and database)."""

RESOURCES = os.path.join(REPO, "resources")
"""The workflow's demo data (genomes, proteins, triplets)."""
