"""Eligibility's model support (CAT-1, CAT-4): a warm catalogue answers at once, without a task;
only the accounts whose catalogue is not ready go through the awaited discovery path."""

from __future__ import annotations

import asyncio

from scheduler_harness import MODEL, Workspace

from sublane_scheduler import Eligibility


class _Models:
    """Models per account; ``warm`` accounts answer :meth:`ready`, the others only ``models_of``."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.warm: set[int] = set()
        self.discovered: list[int] = []
        self.discovering = 0
        self.most = 0

    def ready(self, account_id: int, provider: str) -> frozenset[str] | None:
        if account_id not in self.warm:
            return None
        return frozenset(self.workspace.models.get(account_id, ()))

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]:
        self.discovered.append(account_id)
        self.discovering += 1
        self.most = max(self.most, self.discovering)
        try:
            await asyncio.sleep(0.01)
            return frozenset(self.workspace.models.get(account_id, ()))
        finally:
            self.discovering -= 1


class _Health:
    def needs_reauth(self, account_id: int) -> bool:
        return False

    def refresh_retry_at(self, account_id: int) -> float | None:
        return None


async def test_cat_1_warm_catalogues_are_read_without_a_task_or_an_await(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    workspace.account(group, models=("other-model",))
    models = _Models(workspace)
    models.warm = set(workspace.models)
    eligibility = Eligibility(workspace.directory, models, _Health())
    await workspace.directory.refresh()
    before = len(asyncio.all_tasks())
    coroutine = eligibility.candidates(group, MODEL, None)
    try:
        coroutine.send(None)  # runs to its end without suspending
    except StopIteration as done:
        candidates = done.value
    else:  # pragma: no cover - it suspended
        coroutine.close()
        raise AssertionError("a warm catalogue must not suspend")
    assert len(asyncio.all_tasks()) == before
    assert [account.id for account in candidates.accounts] == [first, second]
    assert candidates.excluded == {"model_support": 1}
    assert models.discovered == []


async def test_cat_4_only_catalogues_not_ready_are_discovered_and_together(workspace: Workspace) -> None:
    group = workspace.group()
    warm = workspace.account(group)
    cold = [workspace.account(group), workspace.account(group, models=("other-model",))]
    third = workspace.account(group)
    models = _Models(workspace)
    models.warm = {warm}
    eligibility = Eligibility(workspace.directory, models, _Health())
    candidates = await eligibility.candidates(group, MODEL, None)
    assert sorted(models.discovered) == sorted([*cold, third])
    assert models.most == 3  # concurrently, as before
    assert [account.id for account in candidates.accounts] == [warm, cold[0], third]  # the group's order
    assert candidates.excluded == {"model_support": 1}
