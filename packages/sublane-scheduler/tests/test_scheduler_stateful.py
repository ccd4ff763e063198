"""A stateful model of the scheduler (hypothesis ``RuleBasedStateMachine``, issue #16).

Requests acquire, finish, get cancelled while waiting; limits go down and up; accounts cool down;
the (fake) clock moves. After every step: no account got a new slot past its limit (ADM-1, ADM-7),
every lease is released exactly once (ADM-6), waiters are served first come, first served (WAIT-3)
while no cooldown reshuffles them, and at the end nothing is left: no slot, no admission place,
no waiter (ADM-6, WAIT-6). The scheduler is the real one, over a real SQLite file.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from scheduler_harness import Workspace

from sublane_core import FakeClock, create_db_engine, upgrade_database
from sublane_scheduler import Grant

_TEMPLATE: Path | None = None


def _template() -> Path:
    global _TEMPLATE
    if _TEMPLATE is None:
        path = Path(tempfile.mkdtemp(prefix="sublane-stateful-")) / "template.db"
        engine = create_db_engine(f"sqlite:///{path}")
        upgrade_database(engine)
        engine.dispose()
        _TEMPLATE = path
    return _TEMPLATE


class SchedulerModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="sublane-stateful-"))
        shutil.copyfile(_template(), self.folder / "sublane.db")
        self.engine = create_db_engine(f"sqlite:///{self.folder / 'sublane.db'}")
        self.clock = FakeClock()
        self.loop = asyncio.new_event_loop()
        self.workspace = Workspace(self.engine, self.clock)
        self.group = self.workspace.group()
        self.limits = {
            self.workspace.account(self.group, limit=2): 2,
            self.workspace.account(self.group, limit=1): 1,
        }
        self.accounts = list(self.limits)
        self.scheduler = self.workspace.scheduler(wait_timeout_s=10_000, queue=1000)
        self.tasks: list[asyncio.Task[Grant]] = []  # in order of arrival
        self.granted: dict[int, Grant] = {}  # task index → grant still held
        self.finished: set[int] = set()  # released or refused or cancelled
        self.grant_order: list[int] = []
        self.reshuffled = False  # a cooldown makes waiters reconsider: FIFO no longer applies
        self.new_grants: list[int] = []

    # -- driving the loop --------------------------------------------------------------------------

    def _settle(self) -> None:
        async def turns() -> None:
            # Until every running request is either granted or in the wait room (selection reads the
            # directory in a worker thread), so each step ends in one well-defined state.
            deadline = self.loop.time() + 5
            while self.loop.time() < deadline:
                for _ in range(5):
                    await asyncio.sleep(0)
                running = sum(1 for task in self.tasks if not task.done())
                if running == self._room_waiting():
                    return
                await asyncio.sleep(0.001)
            raise AssertionError("the scheduler did not settle")

        self.loop.run_until_complete(turns())
        self.new_grants = []
        for index, task in enumerate(self.tasks):
            if index in self.granted or index in self.finished or not task.done():
                continue
            if task.cancelled() or task.exception() is not None:
                self.finished.add(index)
                continue
            self.granted[index] = task.result()
            self.grant_order.append(index)
            self.new_grants.append(index)

    def _room_waiting(self) -> int:
        return self.scheduler.room.waiting()

    def _waiting(self) -> list[int]:
        return [i for i, t in enumerate(self.tasks) if not t.done() and i not in self.finished]

    # -- rules -------------------------------------------------------------------------------------

    @rule()
    def acquire(self) -> None:
        request = self.workspace.route(self.group)
        eligible = self.workspace.eligible(self.group)
        self.tasks.append(self.loop.create_task(self.scheduler.acquire(request, eligible)))
        self._settle()

    @precondition(lambda self: bool(self.granted))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(sorted(self.granted)))
        grant = self.granted.pop(index)
        grant.release("completed")
        assert grant.lease.release("completed") is False  # a second release changes nothing
        self.finished.add(index)
        self._settle()

    @precondition(lambda self: bool(self._waiting()))
    @rule(data=st.data())
    def cancel_waiter(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self._waiting()))
        self.tasks[index].cancel()
        self._settle()
        self.finished.add(index)

    @rule(data=st.data(), limit=st.integers(min_value=1, max_value=3))
    def change_limit(self, data: st.DataObject, limit: int) -> None:
        account = data.draw(st.sampled_from(self.accounts))
        self.loop.run_until_complete(self.workspace.change(account, max_concurrency=limit))
        self.limits[account] = limit
        self.scheduler.limits_changed(account)
        self._settle()

    @rule(data=st.data(), seconds=st.sampled_from([1.0, 5.0]))
    def cool_down(self, data: st.DataObject, seconds: float) -> None:
        account = data.draw(st.sampled_from(self.accounts))
        self.scheduler.cooldowns.rate_limited(account, seconds)
        self.reshuffled = True
        self._settle()

    @rule(seconds=st.sampled_from([0.5, 2.0, 6.0]))
    def clock_step(self, seconds: float) -> None:
        self.clock.advance(seconds)
        for account in self.accounts:  # a cooldown that ended is noticed on the next offer
            self.scheduler.offer(account)
        self._settle()

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def no_new_slot_past_a_limit(self) -> None:
        leases = self.scheduler.leases
        for index in self.new_grants:
            account = self.granted[index].account.id
            assert leases.in_flight(account) <= self.limits[account], (account, self.limits)

    @invariant()
    def every_lease_is_counted_once(self) -> None:
        leases = self.scheduler.leases
        assert leases.acquired_total - leases.released_total == len(self.granted) == leases.total_in_flight()

    @invariant()
    def waiters_are_served_first_come_first_served(self) -> None:
        if self.reshuffled:
            return
        waiting = self._waiting()
        for index in self.new_grants:
            assert all(other > index for other in waiting), (index, waiting)

    def teardown(self) -> None:
        try:
            for grant in self.granted.values():
                grant.release("completed")
            for task in self.tasks:
                task.cancel()

            async def ended() -> None:
                await asyncio.gather(*self.tasks, return_exceptions=True)

            self.loop.run_until_complete(ended())
            scheduler = self.scheduler
            assert scheduler.leases.total_in_flight() == 0
            assert scheduler.leases.acquired_total == scheduler.leases.released_total
            assert scheduler.admission.in_use == 0
            assert scheduler.room.waiting() == 0
        finally:
            self.loop.close()
            self.engine.dispose()
            shutil.rmtree(self.folder, ignore_errors=True)


SchedulerModel.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_scheduler_model = SchedulerModel.TestCase
