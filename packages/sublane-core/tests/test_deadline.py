"""MovingDeadline: one event-loop timer for a deadline that mostly moves later (issue #19)."""

from __future__ import annotations

import asyncio

from sublane_core import MovingDeadline


def _recording(loop: asyncio.AbstractEventLoop) -> tuple[MovingDeadline, list[float]]:
    """A deadline that notes the loop time whenever it expires."""
    fired: list[float] = []
    return MovingDeadline(loop, lambda: fired.append(loop.time())), fired


async def test_it_expires_once_at_its_deadline_and_not_when_cleared() -> None:
    loop = asyncio.get_running_loop()
    deadline, fired = _recording(loop)
    started = loop.time()
    deadline.set_in(0.05)
    await asyncio.sleep(0.15)
    assert len(fired) == 1 and fired[0] - started >= 0.049
    assert deadline.at is None and not deadline.armed  # expired: nothing pending until set again
    deadline.set_in(0.05)
    deadline.at = None  # cleared: the pending timer fires idle
    await asyncio.sleep(0.1)
    assert len(fired) == 1


async def test_moving_it_later_keeps_one_timer_that_re_arms_itself() -> None:
    loop = asyncio.get_running_loop()
    deadline, fired = _recording(loop)
    deadline.set_in(0.1)
    handle = deadline._handle
    deadline.set_in(0.2)  # later: no new timer
    assert deadline._handle is handle
    moved_at = loop.time()
    for _ in range(3):  # later and later, the way a relay's bound moves with each chunk
        await asyncio.sleep(0.06)
        moved_at = loop.time()
        deadline.set_in(0.2)
    await asyncio.sleep(0.4)
    assert len(fired) == 1 and fired[0] >= moved_at + 0.2 - 0.002  # the last deadline is the one


async def test_moving_it_earlier_arms_a_timer_for_the_earlier_time() -> None:
    loop = asyncio.get_running_loop()
    deadline, fired = _recording(loop)
    started = loop.time()
    deadline.set_in(30.0)
    deadline.set_in(0.05)
    await asyncio.sleep(0.2)
    assert len(fired) == 1 and 0.049 <= fired[0] - started < 1.0


async def test_closing_it_cancels_the_timer_and_lets_the_callback_go() -> None:
    loop = asyncio.get_running_loop()
    fired: list[int] = []

    class Owner:
        def __init__(self) -> None:
            self.deadline = MovingDeadline(loop, self.expired)

        def expired(self) -> None:
            fired.append(1)

    owner = Owner()
    owner.deadline.set_in(0.02)
    owner.deadline.close()
    assert not owner.deadline.armed
    assert owner.deadline._expired != owner.expired  # no owner → deadline → owner cycle left
    owner.deadline.set_in(0.01)  # a closed deadline may still be set: it calls nothing
    await asyncio.sleep(0.1)
    assert fired == []
