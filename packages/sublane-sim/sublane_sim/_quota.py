"""Usage windows that fill per request and empty when their reset time passes on the sim clock."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._catalog import Provider

__all__ = ["QuotaWindow", "default_windows"]

FIVE_HOURS = 5 * 3600
ONE_WEEK = 7 * 24 * 3600


@dataclass(slots=True)
class QuotaWindow:
    """One usage window: percent used (0–100), length and the Unix time it next resets."""

    used_percent: float
    window_s: int
    reset_at: float

    def roll(self, now: float) -> None:
        """Empty the window if its reset time has passed, and schedule the next reset."""
        if now < self.reset_at:
            return
        periods = math.floor((now - self.reset_at) / self.window_s) + 1
        self.reset_at += periods * self.window_s
        self.used_percent = 0.0

    def charge(self, percent: float) -> None:
        self.used_percent = min(100.0, self.used_percent + percent)

    @property
    def exhausted(self) -> bool:
        return self.used_percent >= 100.0

    def reset_after(self, now: float) -> int:
        return max(0, math.ceil(self.reset_at - now))

    def as_dict(self, now: float) -> dict[str, float | int]:
        return {
            "used_percent": self.used_percent,
            "window_s": self.window_s,
            "reset_at": self.reset_at,
            "reset_after_s": self.reset_after(now),
        }


def default_windows(
    provider: Provider, plan: str, models: tuple[str, ...], now: float
) -> dict[str, QuotaWindow]:
    """Fresh, empty windows with the shapes each provider reports.

    Codex: `primary` (5 h) and `secondary` (weekly), except the free plan which has a single weekly
    `primary`. Claude: `five_hour` and `seven_day`. Antigravity: one 5 h window per model id.
    """
    if provider == "codex":
        if plan == "free":
            return {"primary": QuotaWindow(0.0, ONE_WEEK, now + ONE_WEEK)}
        return {
            "primary": QuotaWindow(0.0, FIVE_HOURS, now + FIVE_HOURS),
            "secondary": QuotaWindow(0.0, ONE_WEEK, now + ONE_WEEK),
        }
    if provider == "openai":  # per-minute rate limits (x-ratelimit-*, _openai_limits.py)
        return {name: QuotaWindow(0.0, 60, now + 60) for name in ("requests", "tokens")}
    if provider == "claude":
        return {
            "five_hour": QuotaWindow(0.0, FIVE_HOURS, now + FIVE_HOURS),
            "seven_day": QuotaWindow(0.0, ONE_WEEK, now + ONE_WEEK),
        }
    return {model: QuotaWindow(0.0, FIVE_HOURS, now + FIVE_HOURS) for model in models}
