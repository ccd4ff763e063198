"""The management API of SPEC §14: sign-in, users, groups, keys, accounts, request history and the
audit log (OPS-10)."""

from fastapi import APIRouter

from sublane_gateway.management import (
    _accounts,
    _audit,
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
for _module in (_runtime_view, _history, _auth, _users, _groups, _keys, _accounts, _oauth, _audit):
    router.include_router(_module.router)

__all__ = ["router"]
