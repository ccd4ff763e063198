"""When an observation may steer selection, and how far usage runs ahead of an even pace.

QUOTA-3: an observation is **fresh** for 2 minutes after it was taken, shortened by a reset of its
window (after the reset the numbers describe a window that no longer exists). Unknown, stale,
future-dated or already-reset data never means zero quota: it simply does not count.

QUOTA-10: the pace of a window is computed at the observation time, never at reading time: with
half the window gone and 70 % used, usage is 20 points ahead of an even pace.
"""

from __future__ import annotations

from sublane_core import signals

#: How long an observation may exclude an account (QUOTA-3).
FRESH_S = 120.0
#: An observation taken this far in the future of our clock is not believed (clock skew, bad data).
FUTURE_TOLERANCE_S = 5.0


def fresh_until(observed_at: float, resets_at: float | None) -> float:
    """The end of an observation's freshness: 2 minutes after it, or its window's reset if sooner."""
    deadline = observed_at + FRESH_S
    if resets_at is not None and resets_at < deadline:
        return resets_at
    return deadline


def is_fresh(observed_at: float, resets_at: float | None, now: float) -> bool:
    """Whether an observation may steer selection now (neither stale, past its reset, nor future-dated)."""
    if observed_at > now + FUTURE_TOLERANCE_S:
        return False
    return now < fresh_until(observed_at, resets_at)


def is_exhausted(window: signals.QuotaWindow) -> bool:
    """An explicit denial / reached-limit flag, or a window at 100 % used (QUOTA-3)."""
    return window.limit_reached or (window.used_percent is not None and window.used_percent >= 100.0)


def pace_points(
    used_percent: float | None, window_seconds: int | None, resets_at: float | None, observed_at: float
) -> float | None:
    """Points of usage ahead (+) or behind (−) an even pace at the observation time (QUOTA-10).

    ``None`` when the window's length, reset or usage is unknown, or the observation lies outside
    the window it describes (the caller also hides it when the snapshot is not fresh).
    """
    if used_percent is None or not window_seconds or resets_at is None:
        return None
    elapsed = window_seconds - (resets_at - observed_at)
    if not 0 <= elapsed <= window_seconds:
        return None
    return round(used_percent - 100.0 * elapsed / window_seconds, 1)
