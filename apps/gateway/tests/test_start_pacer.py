"""New model calls begin at most ``per_turn`` per turn of the event loop, first come first served
(issue #19): a burst waits its turns, a call alone never waits, a cancelled waiter takes no start."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_gateway._start_pacer import StartPacer


class Turns:
    """Counts turns of the running loop: a callback that schedules itself once per turn."""

    def __init__(self) -> None:
        self.now = 0
        self._stopped = False
        asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self.now += 1
        if not self._stopped:
            asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        self._stopped = True


async def _begin(pacer: StartPacer) -> None:
    if not pacer.take():
        await pacer.wait()


async def _burst(pacer: StartPacer, arrivals: list[int], cancel: set[int]) -> list[tuple[int, int]]:
    """``arrivals[t]`` calls arrive in turn ``t``; those numbered in ``cancel`` are cancelled one
    turn after they arrive. Returns (call, turn it began) in the order the calls began."""
    turns = Turns()
    began: list[tuple[int, int]] = []
    tasks: dict[int, asyncio.Task[None]] = {}

    async def call(number: int) -> None:
        await _begin(pacer)
        began.append((number, turns.now))

    number = 0
    for count in arrivals:
        for _ in range(count):
            tasks[number] = asyncio.create_task(call(number))
            number += 1
        await asyncio.sleep(0)  # the next turn
        for cancelled in cancel & set(tasks):
            tasks[cancelled].cancel()
    await asyncio.wait_for(asyncio.gather(*tasks.values(), return_exceptions=True), 10)
    for _ in range(3):
        await asyncio.sleep(0)  # the pacer's last turn passes
    turns.stop()
    return began


class BurstLog:
    """A burst observer that notes what it was told, and how many calls waited each time."""

    def __init__(self, pacer: StartPacer | None = None) -> None:
        self.said: list[str] = []
        self.pacer = pacer

    def burst_began(self) -> None:
        assert self.pacer is None or self.pacer.waiting == 0  # before the first waiter queues
        self.said.append("began")

    def burst_ended(self) -> None:
        assert self.pacer is None or self.pacer.waiting == 0
        self.said.append("ended")


async def test_a_call_alone_begins_at_once() -> None:
    pacer = StartPacer(8)
    assert pacer.take()
    assert pacer.waiting == 0


async def test_a_burst_begins_a_few_per_turn_in_arrival_order() -> None:
    pacer = StartPacer(4)
    began = await _burst(pacer, [30], set())
    assert [number for number, _ in began] == list(range(30))  # first come, first served
    per_turn = Counter(turn for _, turn in began)
    assert max(per_turn.values()) <= 4
    assert len(per_turn) >= 30 // 4  # spread over the turns after the burst
    assert pacer.waiting == 0


async def test_a_cancelled_waiter_takes_no_start_and_loses_none() -> None:
    pacer = StartPacer(2)
    began = await _burst(pacer, [10], {3, 4, 7})
    assert [number for number, _ in began] == [0, 1, 2, 5, 6, 8, 9]
    assert pacer.waiting == 0
    assert pacer.take()  # idle again: the next call begins at once


def test_a_loop_closed_with_a_turn_due_leaves_the_next_loop_paced() -> None:
    pacer = StartPacer(3)

    async def leave_a_turn_due() -> None:
        for _ in range(5):
            pacer.take()  # the budget's reset is due next turn; the loop closes before it

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(leave_a_turn_due())
    finally:
        loop.close()
    began = asyncio.run(_burst(pacer, [12], set()))
    assert [number for number, _ in began] == list(range(12))
    assert max(Counter(turn for _, turn in began).values()) <= 3


async def test_the_burst_observer_hears_the_queue_begin_and_end_once_per_burst() -> None:
    log = BurstLog()
    pacer = StartPacer(4, log)
    log.pacer = pacer
    for _ in range(4):
        assert pacer.take()  # calls alone, within a turn's starts: no burst
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert log.said == []
    began = await _burst(pacer, [20], set())
    assert len(began) == 20
    assert log.said == ["began", "ended"]
    await _burst(pacer, [3, 9], {12, 13})  # the last waiters cancelled: the queue still ends
    assert log.said == ["began", "ended", "began", "ended"]


def test_per_turn_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        StartPacer(0)


@settings(max_examples=60, deadline=2000)
@given(
    per_turn=st.integers(1, 6),
    arrivals=st.lists(st.integers(0, 12), min_size=1, max_size=8),
    cancel=st.sets(st.integers(0, 60), max_size=10),
)
def test_every_call_not_cancelled_begins_in_order_and_no_turn_takes_more(
    per_turn: int, arrivals: list[int], cancel: set[int]
) -> None:
    """The invariant under any arrivals and cancellations: each call that is not cancelled begins
    exactly once, in arrival order, never more than ``per_turn`` in a turn (each turn also lets in
    whatever arrived in it while starts were left: at most twice ``per_turn`` by the loop's turns),
    and the pacer ends idle; its burst observer hears each burst begin once and end once."""
    log = BurstLog()
    pacer = StartPacer(per_turn, log)
    began = asyncio.run(_burst(pacer, arrivals, cancel))
    numbers = [number for number, _ in began]
    total = sum(arrivals)
    assert len(numbers) == len(set(numbers))
    assert set(range(total)) - cancel <= set(numbers) <= set(range(total))
    waited = [number for number in numbers if number not in cancel]
    assert waited == sorted(waited)
    assert max(Counter(turn for _, turn in began).values(), default=0) <= 2 * per_turn
    assert pacer.waiting == 0
    assert log.said == ["began", "ended"] * (len(log.said) // 2)
