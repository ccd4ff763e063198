"""Background threads lower their own priority once the process asked (issue #49): real threads,
their ``nice`` read back from the kernel."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator

import pytest

from sublane_core import background_steps, background_thread_begins, lower_background_threads

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="nice per thread is Linux's")


@pytest.fixture(autouse=True)
def _asked_nothing() -> Iterator[None]:
    lower_background_threads(0)
    yield
    lower_background_threads(0)


def _nice_of_a_background_thread() -> int:
    seen: list[int] = []

    def run() -> None:
        background_thread_begins()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return seen[0]


def test_a_background_thread_keeps_the_process_priority_unless_asked() -> None:
    assert background_steps() == 0
    assert _nice_of_a_background_thread() == os.getpriority(os.PRIO_PROCESS, 0)


def test_a_background_thread_runs_the_asked_steps_below_the_process_and_the_process_stays() -> None:
    process = os.getpriority(os.PRIO_PROCESS, 0)
    lower_background_threads(10)
    assert background_steps() == 10
    assert _nice_of_a_background_thread() == min(19, process + 10)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == process  # the caller's own


def test_background_steps_stop_at_the_lowest_priority() -> None:
    process = os.getpriority(os.PRIO_PROCESS, 0)
    lower_background_threads(40)
    assert _nice_of_a_background_thread() == 19
    lower_background_threads(-5)  # never above the process
    assert background_steps() == 0
    assert _nice_of_a_background_thread() == process
