"""The management API of SPEC §14: sign-in, users, groups, keys and accounts."""

from fastapi import APIRouter

from sublane_gateway.management import _accounts, _auth, _groups, _keys, _oauth, _users

router = APIRouter()
for _module in (_auth, _users, _groups, _keys, _accounts, _oauth):
    router.include_router(_module.router)

__all__ = ["router"]
