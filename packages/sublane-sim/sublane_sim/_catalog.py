"""Model catalogues per provider and plan (ids as listed in PROTOCOLS.md 1.8, 2.9 and 3.9)."""

from __future__ import annotations

from typing import Literal

__all__ = ["PROVIDERS", "Provider", "default_models", "default_plan"]

Provider = Literal["codex", "claude", "antigravity", "openai"]
PROVIDERS: tuple[Provider, ...] = ("codex", "claude", "antigravity", "openai")

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
# The Codex CLI 0.171.0's bundled catalogue lists these (its default is gpt-6.2-sol, priority 1).
_CODEX_PAID = (
    *_CODEX_COMMON,
    "gpt-5.6-sol",
    "gpt-5.6-terra",
    "gpt-5.6-luna",
    "gpt-6-sol",
    "gpt-6-luna",
    "gpt-6-astra",
    "gpt-6.1-sol",
    "gpt-6.1-terra",
    "gpt-6.2-sol",
    "gpt-6.2-astra",
)
# Spark is not offered to free or team plans.
_CODEX_BY_PLAN: dict[str, tuple[str, ...]] = {
    "free": _CODEX_COMMON,
    "plus": (*_CODEX_PAID, "gpt-5.3-codex-spark"),
    "pro": (*_CODEX_PAID, "gpt-5.3-codex-spark"),
    "team": _CODEX_PAID,
}

# What Claude Code 2.1.332's model catalogue names first-party (its default is claude-opus-5-5, its
# haiku alias and background model claude-haiku-5-5); the families it calls retired (Sonnet 4.5 since
# 2026-11-30, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7, Haiku 3.5) are gone: the API answers 404.
_CLAUDE = (
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
    "claude-fable-5-2",
    "claude-fable-5-1",
    "claude-fable-5",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-opus-4-5-20251101",
    "claude-opus-4-5",
    "claude-haiku-4-5-20251001",
    "claude-haiku-4-5",
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

# The OpenAI API (API keys): what a key of usage tier 1+ lists beside the Codex models.
_OPENAI = (*_CODEX_PAID, "gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini")

_DEFAULT_PLAN: dict[Provider, str] = {
    "codex": "plus",
    "claude": "max",
    "antigravity": "standard-tier",
    "openai": "api_key",
}


def default_plan(provider: Provider) -> str:
    return _DEFAULT_PLAN[provider]


def default_models(provider: Provider, plan: str) -> tuple[str, ...]:
    """Models an account of `plan` may call; unknown plans get the broadest paid list."""
    if provider == "codex":
        return _CODEX_BY_PLAN.get(plan, _CODEX_BY_PLAN["pro"])
    if provider == "claude":
        return _CLAUDE
    if provider == "openai":
        return _OPENAI
    return _ANTIGRAVITY
