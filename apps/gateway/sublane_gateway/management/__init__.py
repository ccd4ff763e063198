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

#: Each part's router, in the order the app includes them. The app includes each itself: an
#: aggregate router here would hold a third copy of every route (``include_router`` copies them,
#: with their validators: about 1 MB, issue #49).
routers: tuple[APIRouter, ...] = tuple(
    _module.router
    for _module in (
        # The runtime view first: /api/accounts/runtime must win over /api/accounts/{account_id}.
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
        # TEAM, POOL, CLIENT-5, COST
        _limits,
        _password_changes,
        _usage,
        _budgets,
        _pool,
        _client_limits,
        _prices,
    )
)

__all__ = ["routers"]
