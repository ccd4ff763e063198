"""The models a key's group can reach: the union of its usable accounts' catalogues, by policy."""

from __future__ import annotations

from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._runtime import ClientRuntime

SHARED_OWNER = "sublane"


async def group_models(runtime: ClientRuntime, principal: Principal) -> dict[str, str]:
    """``model -> owner``: the provider of the group's usable accounts that list it, or
    ``"sublane"`` when accounts of several providers list it (CAT-3)."""
    await runtime.directory.refresh()
    owners: dict[str, str] = {}
    for account in runtime.directory.of_group(principal.group_id):
        if not account.enabled or not account.auth_ok:
            continue
        for model in await runtime.catalog.listed_of(account.id, account.provider):
            owner = owners.setdefault(model, account.provider)
            if owner != account.provider:
                owners[model] = SHARED_OWNER
    allowed = principal.model_policy
    return {model: owner for model, owner in sorted(owners.items()) if allowed is None or model in allowed}
