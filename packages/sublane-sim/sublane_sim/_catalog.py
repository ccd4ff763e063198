"""Model catalogues per provider and plan (ids as listed in PROTOCOLS.md 1.8, 2.9 and 3.9)."""

from __future__ import annotations

from typing import Literal

__all__ = ["PROVIDERS", "Provider", "default_models", "default_plan"]

Provider = Literal["codex", "claude", "antigravity"]
PROVIDERS: tuple[Provider, ...] = ("codex", "claude", "antigravity")

_CODEX_COMMON = (
    "gpt-5",
    "gpt-5-codex",
    "gpt-5.2",
    "gpt-5.3-codex",
    "gpt-5.4",
    "gpt-5.4-mini",
    "gpt-5.5",
    "codex-auto-review",
)
_CODEX_PAID = (*_CODEX_COMMON, "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna")
# Spark is not offered to free or team plans.
_CODEX_BY_PLAN: dict[str, tuple[str, ...]] = {
    "free": _CODEX_COMMON,
    "plus": (*_CODEX_PAID, "gpt-5.3-codex-spark"),
    "pro": (*_CODEX_PAID, "gpt-5.3-codex-spark"),
    "team": _CODEX_PAID,
}

_CLAUDE = (
    "claude-haiku-4-5-20251001",
    "claude-haiku-4-5",
    "claude-sonnet-4-5-20250929",
    "claude-sonnet-4-5",
    "claude-sonnet-4-6",
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-opus-4-5-20251101",
    "claude-opus-4-5",
    "claude-opus-4-1-20250805",
    "claude-opus-4-20250514",
    "claude-sonnet-4-20250514",
    "claude-3-7-sonnet-20250219",
    "claude-3-5-haiku-20241022",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-fable-5",
)

_ANTIGRAVITY = (
    "claude-opus-4-6-thinking",
    "claude-sonnet-4-6",
    "gemini-3-flash",
    "gemini-3-pro-high",
    "gemini-3-pro-low",
    "gemini-3.1-flash-image",
    "gemini-3.1-pro-high",
    "gemini-3.1-pro-low",
    "gemini-3.1-flash-lite",
    "gpt-oss-120b-medium",
)

_DEFAULT_PLAN: dict[Provider, str] = {"codex": "plus", "claude": "max", "antigravity": "standard-tier"}


def default_plan(provider: Provider) -> str:
    return _DEFAULT_PLAN[provider]


def default_models(provider: Provider, plan: str) -> tuple[str, ...]:
    """Models an account of `plan` may call; unknown plans get the broadest paid list."""
    if provider == "codex":
        return _CODEX_BY_PLAN.get(plan, _CODEX_BY_PLAN["pro"])
    if provider == "claude":
        return _CLAUDE
    return _ANTIGRAVITY
