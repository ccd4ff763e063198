"""A group's model aliases (ALIAS-1): ``GET``/``PUT /api/groups/{id}/aliases``, admins only.

The list an admin reads and writes is the group's effective one: the built-in defaults (each
marked ``builtin``) as overridden or removed, and the group's own. Writing it stores only how it
differs from the defaults, so a default the admin kept follows the defaults of later versions.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session, col, delete, select

from sublane_core import AccountModels, GroupAccount, GroupAlias, ResourceGroup, SubLaneError, signals
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._models import GroupAliasesBody, PathId
from sublane_gateway.pipeline import client_runtime, effective_aliases

router = APIRouter(tags=["groups"])


def _stored(db: Session, group_id: int) -> dict[str, str]:
    rows = db.exec(select(GroupAlias).where(GroupAlias.group_id == group_id))
    return {row.alias: row.model for row in rows}


def _listed(db: Session, group_id: int) -> set[str]:
    """The models the group's accounts list (their last discovered catalogues, CAT-1)."""
    accounts = select(GroupAccount.account_id).where(GroupAccount.group_id == group_id)
    listed: set[str] = set()
    for catalogue in db.exec(select(AccountModels).where(col(AccountModels.account_id).in_(accounts))):
        listed.update(catalogue.models)
    return listed


def _view(defaults: dict[str, str], aliases: dict[str, str]) -> dict[str, Any]:
    return {
        "aliases": [
            {"alias": alias, "model": model, "builtin": defaults.get(alias) == model}
            for alias, model in sorted(aliases.items())
        ],
        "defaults": [{"alias": alias, "model": model} for alias, model in sorted(defaults.items())],
    }


@router.get("/api/groups/{group_id}/aliases")
def get_aliases(group_id: PathId, request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """The group's model aliases; ``builtin`` marks a default kept as it is, ``defaults`` lists
    the built-in ones."""
    get_or_404(db, ResourceGroup, group_id, "group")
    defaults = client_runtime(request).aliases.defaults
    return _view(defaults, effective_aliases(defaults, _stored(db, group_id)))


@router.put("/api/groups/{group_id}/aliases")
def set_aliases(
    group_id: PathId, body: GroupAliasesBody, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Replace the group's aliases (at most 256). A default left out is removed for this group.

    409 ``alias_shadows_model``: an alias names a model an account of the group lists (a kept
    default is not checked: the listed model wins over it when a request comes); 400
    ``alias_shadows_model`` for a case variant of such a model. 409 ``alias_chain``: an alias's
    model is itself an alias. 400 ``invalid_request``: an alias or a model with a provider prefix
    (``codex/gpt-5``: the prefix narrows a request's providers before aliases are looked up, so
    such an alias would never be used, and such a model never listed).
    """
    get_or_404(db, ResourceGroup, group_id, "group")
    runtime = client_runtime(request)
    defaults = runtime.aliases.defaults
    wanted: dict[str, str] = {}
    for entry in body.aliases:
        if entry.alias in wanted:
            raise SubLaneError("invalid_request", f"The alias {entry.alias!r} is given twice.")
        wanted[entry.alias] = entry.model
    providers = set(runtime.adapters)
    for alias, model in wanted.items():
        for name in (alias, model):
            if name.split("/", 1)[0] in providers:
                raise SubLaneError(
                    "invalid_request",
                    f"{name!r} has a provider prefix; aliases and their models are plain model names.",
                )
    listed = _listed(db, group_id)
    folded = {model.casefold(): model for model in listed}
    for alias, model in wanted.items():
        if defaults.get(alias) == model:
            continue
        if alias in listed:
            raise SubLaneError("alias_shadows_model", f"An account of the group lists {alias!r}.")
        if alias.casefold() in folded:
            shadowed = folded[alias.casefold()]
            raise SubLaneError(
                "alias_shadows_model",
                f"An account of the group lists {shadowed!r}; {alias!r} differs in case only.",
                status=400,
            )
    for alias, model in wanted.items():
        if alias == model or model in wanted:
            raise SubLaneError("alias_chain", f"{alias!r} points to {model!r}, which is an alias.")
    stored = {alias: model for alias, model in wanted.items() if defaults.get(alias) != model}
    stored.update({alias: "" for alias in defaults if alias not in wanted})  # removed defaults
    db.exec(delete(GroupAlias).where(col(GroupAlias.group_id) == group_id))
    db.add_all(GroupAlias(group_id=group_id, alias=alias, model=model) for alias, model in stored.items())
    audit(
        db,
        request,
        admin,
        "group.aliases",
        group_id,
        aliases=len(wanted),
        added=sorted(alias for alias in wanted if alias not in defaults),
        removed_defaults=sorted(alias for alias in defaults if alias not in wanted),
    )
    db.commit()
    runtime.aliases.invalidate()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.GROUP, id=group_id))
    return _view(defaults, wanted)
