"""Shared paths for the foliosim Python tests."""

from pathlib import Path

import pytest

#: The repository root (the tests run the scenarios of its corpus).
REPO = Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "scenarios"


@pytest.fixture
def anon_scan() -> Path:
    """Seed 003's scan: write one byte to each page of a 256 MiB
    anonymous mapping, in a 2 GiB machine, THP top level `madvise`."""
    return SCENARIOS / "seed003" / "anon-scan.toml"
