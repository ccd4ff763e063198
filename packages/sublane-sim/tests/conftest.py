"""Shared fixtures: real HTTP clients against the `sim` fixture (from the package's pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(10.0)) as client:
        yield client
