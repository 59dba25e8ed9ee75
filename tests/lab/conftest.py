"""The mutation fixture of the Memory lab's tests."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from lineage import mechanisms


@pytest.fixture
def mutate():
    """mutate(name, op): the mechanism ``name`` of the table runs ``op`` until the test ends."""
    with contextlib.ExitStack() as stack:

        def swap(name: str, op) -> None:
            wrong = dataclasses.replace(mechanisms.mechanism(name), op=op)
            stack.enter_context(mechanisms.registered(wrong, replace=True))

        yield swap
