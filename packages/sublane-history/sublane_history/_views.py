"""How records and filter choices are shown (the SPEC §14 record shape; add fields, never rename).

Personal answers (HIST-7) blank the subscription account (``account_id``, ``account_name``) and show
the routing explanation as counts only (HIST-12).
"""

from __future__ import annotations

from typing import Any, Final

from sublane_history._cache_rate import cache_hit_rate, hit_rate
from sublane_history._queries import Choice, FilterChoices, RecordRow

DELETED_ACCOUNT: Final = "deleted"  # HIST-9: how an account deleted since is named


def compact_request_id(request_id: str) -> str:
    """The short form shown under a start time (HIST-11): the prefix and the random tail.

    ``req_`` IDs begin with their creation time, so the tail is what tells neighbours apart.
    """
    prefix, _, rest = request_id.partition("_")
    if not rest or len(rest) <= 8:
        return request_id
    return f"{prefix}_…{rest[-8:]}"


def personal_routing(routing: dict[str, Any] | None) -> dict[str, Any] | None:
    """The explanation as a member may see it: the rule and counts, nothing else."""
    if routing is None:
        return None
    shown: dict[str, Any] = {}
    if isinstance(routing.get("rule"), str):
        shown["rule"] = routing["rule"]
    if isinstance(routing.get("candidates"), int):
        shown["candidates"] = routing["candidates"]
    excluded = routing.get("excluded")
    if isinstance(excluded, dict):
        shown["excluded"] = {
            str(reason): number for reason, number in excluded.items() if isinstance(number, int)
        }
    for part in ("refused", "parent", "rotation", "overflow_reason"):  # codes, never an account
        if isinstance(routing.get(part), str):
            shown[part] = routing[part]
    if routing.get("metered") is True:  # PAID-2: served by a metered (paid) account
        shown["metered"] = True
    attempts = routing.get("attempts")
    if isinstance(attempts, list):  # FAIL-2: account ids are for admins only
        shown["attempts"] = [
            {"outcome": attempt.get("outcome"), "error_code": attempt.get("error_code")}
            for attempt in attempts
            if isinstance(attempt, dict)
        ]
    return shown


def record_view(row: RecordRow, *, personal: bool) -> dict[str, Any]:
    """One record as the history API answers it."""
    if personal:
        account_id: int | None = None
        account_name: str | None = None
    else:
        account_id = row.account_id
        account_name = DELETED_ACCOUNT if row.account_deleted else row.account_name
    view: dict[str, Any] = {
        "id": row.id,
        "request_id": row.request_id,
        "request_id_short": compact_request_id(row.request_id),
        "started_at": row.started_at,
        "duration_ms": row.duration_ms,
        "first_token_ms": row.first_token_ms,
        "user_id": row.user_id,
        "username": row.username,
        "key_id": row.key_id,
        "key_name": row.key_name,
        "group_id": row.group_id,
        "account_id": account_id,
        "account_name": account_name,
        "provider": row.provider,
        "model": row.model,
        "protocol": row.protocol,
        "operation": row.operation,
        "outcome": row.outcome,
        "error_code": row.error_code,
        "upstream_status": row.upstream_status,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cached_tokens": row.cached_tokens,
        "cache_hit_rate": cache_hit_rate(row.input_tokens, row.cached_tokens),
        "cache": {  # COST-4
            "hit_rate": hit_rate(row.input_tokens, row.cached_tokens),
            "miss_reason": row.cache_miss_reason,
        },
        "routing": personal_routing(row.routing) if personal else row.routing,
        "served_model": row.served_model or row.model,  # an alias's model (ALIAS-1)
        # COST-2: the counts again with the cache writes and the API-equivalent cost (null: unpriced)
        "usage": {
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "cached_tokens": row.cached_tokens,
            "cache_write_tokens": row.cache_write_tokens,
            "cost_usd": row.cost_usd,
        },
        "timing": row.timing,  # where time went (OPS-13)
    }
    if not personal:
        view["account_deleted"] = row.account_deleted
    return view


def _choice(choice: Choice, *, deleted: str | None = None) -> dict[str, Any]:
    return {"id": choice.id, "name": choice.name if choice.name is not None else deleted}


def choices_view(choices: FilterChoices, *, personal: bool) -> dict[str, Any]:
    """Filter options: models, keys and outcomes; for admins also members and accounts. No secrets."""
    view: dict[str, Any] = {
        "models": choices.models,
        "keys": [_choice(key) for key in choices.keys],
        "outcomes": choices.outcomes,
    }
    if not personal:
        view["members"] = [{"id": member.id, "username": member.name} for member in choices.members]
        view["accounts"] = [_choice(account, deleted=DELETED_ACCOUNT) for account in choices.accounts]
    return view
