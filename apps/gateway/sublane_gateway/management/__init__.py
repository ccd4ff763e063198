"""The management API of SPEC §14: sign-in, users, groups, keys, accounts, request history and the
audit log (OPS-10); the team controls of SPEC §21: limits, passwords, usage summaries and token
budgets."""

from fastapi import APIRouter

from sublane_gateway.management import (
    _accounts,
    _aliases,
    _audit,
    _auth,
    _budgets,
    _bundles,
    _catalogue,
    _check,
    _checklist,
    _client_limits,
    _connect,
    _groups,
    _history,
    _keys,
    _limits,
    _oauth,
    _oidc,
    _password_changes,
    _pool,
    _prices,
    _providers,
    _runtime_view,
    _totp,
    _upstream_changes,
    _usage,
    _users,
    _webhooks,
)

router = APIRouter()
# The runtime view first: /api/accounts/runtime must win over /api/accounts/{account_id}.
for _module in (
    _runtime_view,
    _check,
    _catalogue,
    _history,
    _auth,
    _oidc,
    _totp,
    _users,
    _groups,
    _aliases,
    _keys,
    _bundles,
    _accounts,
    _oauth,
    _providers,
    _audit,
    _webhooks,
    _connect,
    _checklist,
    _upstream_changes,
):
    router.include_router(_module.router)
for _module in (
    _limits,
    _password_changes,
    _usage,
    _budgets,
    _pool,
    _client_limits,
    _prices,
):  # TEAM, POOL, CLIENT-5, COST
    router.include_router(_module.router)

__all__ = ["router"]
