"""The in-memory account directory: reloaded lazily after a change, never per selection."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from scheduler_harness import Workspace
from sqlmodel import Session

from sublane_core import AUTH_REAUTH_REQUIRED, Account
from sublane_scheduler import AccountDirectory, AccountInfo


def count_account_loads(workspace: Workspace) -> list[str]:
    loads: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "FROM accounts" in statement and "WHERE" not in statement:  # a whole reload
            loads.append(statement)

    sa.event.listen(workspace.engine, "before_cursor_execute", record)
    return loads


async def test_accounts_are_read_by_group_in_a_stable_order(workspace: Workspace) -> None:
    one, two = workspace.group(), workspace.group()
    first = workspace.account(one, two, limit=4)
    second = workspace.account(one, provider="claude", enabled=False)
    alone = workspace.account()
    directory = AccountDirectory(workspace.engine)
    await directory.refresh()
    assert [account.id for account in directory.of_group(one)] == [first, second]
    assert [account.id for account in directory.of_group(two)] == [first]
    assert directory.of_group(999) == []
    assert {account.id for account in directory.all()} == {first, second, alone}
    info = directory.get(first)
    assert info == AccountInfo(first, "codex", info.name if info else "", True, 4, True, 1)
    disabled = directory.get(second)
    assert disabled is not None and disabled.provider == "claude" and not disabled.enabled


async def test_a_refresh_reads_the_tables_only_after_an_invalidation(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=2)
    directory = AccountDirectory(workspace.engine)
    loads = count_account_loads(workspace)
    for _ in range(3):
        await directory.refresh()
    assert len(loads) == 1
    with Session(workspace.engine) as db:
        row = db.get(Account, account)
        assert row is not None
        row.max_concurrency, row.auth_state = 7, AUTH_REAUTH_REQUIRED
        db.add(row)
        db.commit()
    await directory.refresh()
    assert len(loads) == 1  # not told yet: the picture is unchanged
    info = directory.get(account)
    assert info is not None and info.max_concurrency == 2
    directory.invalidate()
    await directory.refresh()
    info = directory.get(account)
    assert info is not None and (info.max_concurrency, info.auth_ok) == (7, False)
    assert len(loads) == 2


async def test_a_change_during_a_reload_is_not_lost(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group)
    directory = AccountDirectory(workspace.engine)
    loads = count_account_loads(workspace)

    def invalidate_once(*_args: Any) -> None:
        if len(loads) == 1:
            directory.invalidate()  # a change lands while the first load runs

    sa.event.listen(workspace.engine, "after_cursor_execute", invalidate_once)
    await directory.refresh()
    await directory.refresh()  # still stale: read again
    await directory.refresh()
    assert len(loads) == 2
