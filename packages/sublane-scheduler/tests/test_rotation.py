"""Round-robin per group over the candidates that admit a request (AFF-5)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_scheduler import AccountInfo, Lease, LeaseTable, RoundRobin


def accounts(*ids: int) -> list[AccountInfo]:
    return [AccountInfo(id, "codex", f"a{id}", True, 1, True, 1) for id in ids]


def taker(table: LeaseTable, refuse: set[int] | None = None) -> object:
    def take(account: AccountInfo) -> Lease | None:
        if refuse and account.id in refuse:
            return None
        return table.try_acquire(account.id, 100, "r", "gpt-5")

    return take


def picks(
    rotation: RoundRobin, group: int, candidates: list[AccountInfo], times: int, **kw: set[int]
) -> list[int]:
    table = LeaseTable()
    chosen = []
    for _ in range(times):
        lease = rotation.acquire(group, candidates, taker(table, kw.get("refuse")))  # type: ignore[arg-type]
        chosen.append(lease.account_id if lease is not None else 0)
    return chosen


def test_aff_5_new_selections_rotate_in_order() -> None:
    assert picks(RoundRobin(), 1, accounts(1, 2, 3), 7) == [1, 2, 3, 1, 2, 3, 1]


def test_aff_5_an_account_that_refuses_is_skipped_and_the_cursor_moves_past_the_chosen_one() -> None:
    rotation = RoundRobin()
    assert picks(rotation, 1, accounts(1, 2, 3), 4, refuse={2}) == [1, 3, 1, 3]
    assert picks(rotation, 1, accounts(1, 2, 3), 3) == [1, 2, 3]  # after 3 comes 1 again


def test_aff_5_cursors_are_per_group() -> None:
    rotation = RoundRobin()
    candidates = accounts(1, 2, 3)
    assert picks(rotation, 1, candidates, 2) == [1, 2]
    assert picks(rotation, 2, candidates, 1) == [1]
    assert picks(rotation, 1, candidates, 1) == [3]


def test_aff_5_nothing_to_pick() -> None:
    rotation = RoundRobin()
    assert picks(rotation, 1, [], 1) == [0]
    assert picks(rotation, 1, accounts(1, 2), 2, refuse={1, 2}) == [0, 0]
    assert picks(rotation, 1, accounts(1, 2), 1) == [1]  # a refusal did not move the cursor


def test_aff_5_a_shrunk_candidate_list_still_rotates() -> None:
    rotation = RoundRobin()
    assert picks(rotation, 1, accounts(1, 2, 3, 4), 3) == [1, 2, 3]
    assert picks(rotation, 1, accounts(1, 2), 3) == [2, 1, 2]  # cursor 3 wraps onto two accounts


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(st.floats(0.01, 1.0), min_size=2, max_size=5),
    rounds=st.integers(1, 400),
)
def test_qw_1_weighted_shares_stay_within_one_selection_per_account(
    weights: list[float], rounds: int
) -> None:
    rotation = RoundRobin()
    candidates = accounts(*range(1, len(weights) + 1))
    table = LeaseTable()

    def take(account: AccountInfo) -> Lease | None:
        return table.try_acquire(account.id, 1000, "r", "gpt-5")

    chosen: dict[int, int] = dict.fromkeys(range(1, len(weights) + 1), 0)
    for _ in range(rounds):
        lease = rotation.acquire_weighted(7, candidates, weights, take)
        assert lease is not None
        chosen[lease.account_id] += 1
    total = sum(weights)
    for index, weight in enumerate(weights, start=1):
        assert abs(chosen[index] - rounds * weight / total) <= len(weights)
