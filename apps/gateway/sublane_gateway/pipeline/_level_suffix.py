"""Thinking-level suffixes written the CPA way, ``gemini-3-pro(high)`` (CAT-2, ALIAS-2, QUOTA-4).

Some clients and SDKs name a thinking level in parentheses after the model. Upstreams do not know
that form: Antigravity lists each level as a native id of its own (``gemini-3-pro-high``), with its
own quota. ``base(level)`` is read as ``base-level`` when the group lists that id, else as ``base``
(a numeric budget such as ``claude-sonnet-4-5(16384)`` names no id); the native id is then what
is routed, checked against the policy, counted for quota and model limits, sent upstream and
recorded. A name the group lists neither way stays as written (and gets ``model_not_found``).

The dash form some clients append to a base Gemini id, ``gemini-3-flash-high``, is read the same
way when the group does not list that name itself: as the base the group lists (ALIAS-2).
"""

from __future__ import annotations

import re
from typing import Final

from sublane_gateway.pipeline._group_models import group_models
from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._runtime import ClientRuntime

_LEVEL: Final = re.compile(r"(?P<base>[^()\s]+)\((?P<level>[A-Za-z0-9._-]{1,32})\)")
_DASH_LEVEL: Final = re.compile(r"(?P<base>.+?)-(?:minimal|low|medium|high|xhigh|extra-low)")


def has_level(model: str) -> bool:
    """Whether ``model`` names a thinking level, in parentheses or as a dash suffix."""
    return model.endswith(")") or _DASH_LEVEL.fullmatch(model) is not None


def level_candidates(model: str) -> tuple[str, ...]:
    """The native ids ``model`` may stand for, in order of preference (none: not a suffix form)."""
    match = _LEVEL.fullmatch(model)
    if match is None:
        return ()
    base, level = match["base"], match["level"].lower()
    return (base,) if level.isdigit() else (f"{base}-{level}", base)


async def resolve_level_suffix(runtime: ClientRuntime, principal: Principal, model: str) -> str:
    """The native id the group lists for a ``base(level)`` or ``base-level`` name; ``model``
    itself otherwise (and always when the group lists ``model``)."""
    candidates = level_candidates(model)
    if not candidates:
        dash = _DASH_LEVEL.fullmatch(model)
        if dash is None:
            return model
        candidates = (model, dash["base"])
    listed = await group_models(runtime, principal)
    return next((candidate for candidate in candidates if candidate in listed), model)
