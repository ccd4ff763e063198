"""Conversation bindings: digest of (group, key), stored in the ``affinity`` table (AFF-7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from scheduler_harness import Workspace
from sqlmodel import Session, select

from sublane_core import AFFINITY_SCOPE_AUTO, Affinity, FakeClock
from sublane_scheduler import AffinityStore, binding_digest


def rows(workspace: Workspace) -> list[Affinity]:
    with Session(workspace.engine) as db:
        return list(db.exec(select(Affinity)))


def count_affinity_reads(workspace: Workspace) -> list[str]:
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "FROM affinity" in statement:
            statements.append(statement)

    sa.event.listen(workspace.engine, "before_cursor_execute", record)
    return statements


def test_aff_7_digest_is_of_group_and_key_and_hides_the_key() -> None:
    digest = binding_digest(1, "thread-secret-42")
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert digest == binding_digest(1, "thread-secret-42")
    assert digest != binding_digest(2, "thread-secret-42")  # the same key in another group
    assert digest != binding_digest(1, "thread-secret-43")
    assert binding_digest(1, "2\x00x") != binding_digest(12, "x")  # no ambiguous concatenation
    assert "thread-secret" not in digest


async def test_aff_7_binding_survives_a_new_store_over_the_same_database(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group)
    digest = binding_digest(group, "thread-1")
    await AffinityStore(workspace.engine, workspace.clock).bind(digest, group, account, "gpt-5")
    restarted = AffinityStore(workspace.engine, workspace.clock)  # a new process, empty cache
    assert await restarted.get(digest) == account
    [row] = rows(workspace)
    assert row.digest == digest and row.scope == AFFINITY_SCOPE_AUTO
    assert (row.group_id, row.account_id, row.model) == (group, account, "gpt-5")
    assert row.created_at == row.last_used_at == workspace.clock.time()
    assert "thread-1" not in repr(row.model_dump())  # the conversation key itself is never stored


async def test_aff_7_a_moved_binding_is_rewritten_not_duplicated(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    store = AffinityStore(workspace.engine, workspace.clock)
    digest = binding_digest(group, "thread-1")
    await store.bind(digest, group, first, "gpt-5")
    created = workspace.clock.time()
    workspace.clock.advance(30)
    await store.bind(digest, group, second, "gpt-5-mini")
    assert await store.get(digest) == second
    assert await AffinityStore(workspace.engine, workspace.clock).get(digest) == second
    [row] = rows(workspace)
    assert (row.account_id, row.model, row.created_at, row.last_used_at) == (
        second,
        "gpt-5-mini",
        created,
        created + 30,
    )


async def test_aff_7_unknown_conversations_are_unbound(workspace: Workspace) -> None:
    store = AffinityStore(workspace.engine, workspace.clock)
    assert await store.get(binding_digest(1, "never-seen")) is None


async def test_aff_7_the_table_is_read_once_per_conversation(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group)
    await AffinityStore(workspace.engine, workspace.clock).bind(
        binding_digest(group, "known"), group, account, "gpt-5"
    )
    reads = count_affinity_reads(workspace)
    store = AffinityStore(workspace.engine, workspace.clock)
    for _ in range(5):
        assert await store.get(binding_digest(group, "known")) == account
        assert await store.get(binding_digest(group, "unknown")) is None  # a miss is remembered too
    assert len(reads) == 2


async def test_aff_7_an_evicted_binding_is_read_back_from_the_table(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group)
    store = AffinityStore(workspace.engine, workspace.clock, max_cached=2)
    digests = [binding_digest(group, f"thread-{index}") for index in range(4)]
    for digest in digests:
        await store.bind(digest, group, account, "gpt-5")
    reads = count_affinity_reads(workspace)
    assert [await store.get(digest) for digest in digests] == [account] * 4
    assert len(reads) >= 2  # the two oldest fell out of the bounded cache


async def test_a_deleted_account_s_bindings_are_forgotten(workspace: Workspace) -> None:
    group = workspace.group()
    gone, kept = workspace.account(group), workspace.account(group)
    store = AffinityStore(workspace.engine, workspace.clock)
    await store.bind(binding_digest(group, "a"), group, gone, "gpt-5")
    await store.bind(binding_digest(group, "b"), group, kept, "gpt-5")
    store.forget_account(gone)
    assert await store.get(binding_digest(group, "a")) is None
    assert await store.get(binding_digest(group, "b")) == kept


async def test_aff_4_a_binding_remembers_the_model_it_was_last_used_with(tmp_path: Path) -> None:
    from sublane_core import Account, ResourceGroup, create_db_engine, upgrade_database

    engine = create_db_engine(f"sqlite:///{tmp_path}/sublane.db")
    upgrade_database(engine)
    with Session(engine) as db:
        db.add(ResourceGroup(id=1, name="default", created_at=0, updated_at=0))
        db.flush()
        db.add(Account(id=1, provider="codex", name="a", credentials=b"x", created_at=0, updated_at=0))
        db.commit()
    clock = FakeClock()
    store = AffinityStore(engine, clock)
    digest = binding_digest(1, "thread")
    await store.bind(digest, 1, 1, "gpt-5-codex")
    assert await store.binding(digest) == (1, "gpt-5-codex")
    await store.bind(digest, 1, 1, "gpt-5.5")
    assert await AffinityStore(engine, clock).binding(digest) == (1, "gpt-5.5")  # read back from the table
    engine.dispose()
