"""The management API of SPEC §14: sign-in, users, groups, keys, accounts and request history."""

from fastapi import APIRouter

from sublane_gateway.management import (
    _accounts,
    _auth,
    _groups,
    _history,
    _keys,
    _oauth,
    _runtime_view,
    _users,
)

router = APIRouter()
# The runtime view first: /api/accounts/runtime must win over /api/accounts/{account_id}.
for _module in (_runtime_view, _history, _auth, _users, _groups, _keys, _accounts, _oauth):
    router.include_router(_module.router)

__all__ = ["router"]
