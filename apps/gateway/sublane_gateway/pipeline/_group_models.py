"""The models a key's group can reach: the union of its usable accounts' catalogues, by policy."""

from __future__ import annotations

from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._runtime import ClientRuntime

SHARED_OWNER = "sublane"


async def group_models(runtime: ClientRuntime, principal: Principal) -> dict[str, str]:
    """``model -> owner``: the provider of the group's usable accounts that list it, or
    ``"sublane"`` when accounts of several providers list it (CAT-3)."""
    return await served_by_group(runtime, principal.group_id, principal.model_policy)


async def served_by_group(
    runtime: ClientRuntime, group_id: int, allowed: tuple[str, ...] | None
) -> dict[str, str]:
    """:func:`group_models` for a group and its model policy (``None``: every model)."""
    await runtime.directory.refresh()
    owners: dict[str, str] = {}
    for account in runtime.directory.of_group(group_id):
        if not account.enabled or not account.auth_ok:
            continue
        for model in await runtime.catalog.listed_of(account.id, account.provider):
            owner = owners.setdefault(model, account.provider)
            if owner != account.provider:
                owners[model] = SHARED_OWNER
    return {model: owner for model, owner in sorted(owners.items()) if allowed is None or model in allowed}


async def resolve_alias(runtime: ClientRuntime, principal: Principal, model: str) -> str | None:
    """The model ``model`` stands for as an alias of ``principal``'s group (ALIAS-1), or ``None``
    when it is none there — or when the group's accounts list that name themselves: their model
    wins over an alias."""
    aliases = runtime.aliases.cached(principal.group_id)
    if aliases is None:
        aliases = await runtime.aliases.of_group(principal.group_id)
    target = aliases.get(model)
    if target is None or model in await group_models(runtime, principal):
        return None
    return target


async def aliased(runtime: ClientRuntime, principal: Principal, model: str) -> tuple[str | None, str]:
    """``(the alias asked for or None, the model to route)`` (ALIAS-1)."""
    target = await resolve_alias(runtime, principal, model)
    return (None, model) if target is None else (model, target)


async def listed_models(runtime: ClientRuntime, principal: Principal) -> dict[str, str]:
    """:func:`group_models` and the group's aliases whose model it lists, each with that model's
    owner — what the model lists show (ALIAS-1)."""
    owners = await group_models(runtime, principal)
    aliases = await runtime.aliases.of_group(principal.group_id)
    if not aliases:
        return owners
    shown = dict(owners)
    for alias, target in aliases.items():
        owner = owners.get(target)
        if owner is not None and alias not in owners:
            shown[alias] = owner
    return dict(sorted(shown.items()))
