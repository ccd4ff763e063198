"""The latest quota of every account, in memory, as selection reads it (QUOTA-2…5, QW-1).

The book only ever holds what the store has saved (QUOTA-8: saved before published). Each window
keeps the time it was observed; a newer observation of a window replaces it, an older one (a
refresh that was already running when a newer answer arrived) is ignored, and everything of an
earlier account lifecycle is dropped (disable/enable, re-authorization).

Selection asks two questions, both O(windows of the account):

- :meth:`QuotaBook.exhausted_until`: is the account out of quota for this model — an explicit
  denial, a reached-limit flag or a main window at 100 % — by a **fresh** observation? The answer
  is the time to look again (the earliest freshness deadline of those windows).
- :meth:`QuotaBook.remaining`: the remaining fraction of the most constrained fresh main window,
  when every such window is complete (QW-1/2).

Windows count only when ``main`` (QUOTA-4: additional named limits never exclude) and when they
belong to the whole account (``model == ""``: Codex, Claude) or to exactly the requested model
(Antigravity, thinking suffixes normalized).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sublane_core import Clock, signals
from sublane_quota._freshness import fresh_until, is_exhausted, is_fresh
from sublane_quota._models import quota_model


@dataclass(frozen=True, slots=True)
class ObservedWindow:
    """One window as last observed."""

    window: signals.QuotaWindow
    observed_at: float

    @property
    def fresh_until(self) -> float:
        return fresh_until(self.observed_at, self.window.resets_at)


@dataclass(slots=True)
class _AccountQuota:
    revision: int
    plan: str | None = None
    windows: dict[tuple[str, str], ObservedWindow] = field(default_factory=dict)  # (model, window)

    @property
    def newest(self) -> float | None:
        return max((w.observed_at for w in self.windows.values()), default=None)


class QuotaBook:
    """Observations by account, newest per window, of the current lifecycle only."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._accounts: dict[int, _AccountQuota] = {}
        self._revisions: dict[int, int] = {}  # the lowest lifecycle revision still accepted

    # -- writing (after the store saved it) -------------------------------------------------------

    def apply(self, observation: signals.QuotaObserved) -> bool:
        """Take in a saved observation; ``False`` when it belongs to an earlier lifecycle."""
        account_id, revision = observation.account_id, observation.lifecycle_revision
        if revision < self._revisions.get(account_id, 0):
            return False
        entry = self._accounts.get(account_id)
        if entry is None or entry.revision < revision:
            entry = self._accounts[account_id] = _AccountQuota(revision)
            self._revisions[account_id] = revision
        elif entry.revision > revision:
            return False
        if observation.plan is not None:
            entry.plan = observation.plan
        for window in observation.windows:
            key = (window.model, window.window)
            known = entry.windows.get(key)
            if known is None or known.observed_at <= observation.observed_at:
                entry.windows[key] = ObservedWindow(window, observation.observed_at)
        return True

    def invalidate(self, account_id: int, revision: int) -> None:
        """A new lifecycle began (QUOTA-8): forget the account's windows; older ones are refused."""
        self._revisions[account_id] = max(revision, self._revisions.get(account_id, 0))
        entry = self._accounts.get(account_id)
        if entry is not None and entry.revision < revision:
            del self._accounts[account_id]

    def forget(self, account_id: int) -> None:
        """The account was deleted."""
        self._accounts.pop(account_id, None)
        self._revisions.pop(account_id, None)

    # -- reading ----------------------------------------------------------------------------------

    def windows(self, account_id: int) -> list[ObservedWindow]:
        """Every window of the account as last observed (fresh or not)."""
        entry = self._accounts.get(account_id)
        return list(entry.windows.values()) if entry is not None else []

    def window(self, account_id: int, model: str, name: str) -> ObservedWindow | None:
        """One window of the account as last observed (fresh or not), if known."""
        entry = self._accounts.get(account_id)
        return entry.windows.get((model, name)) if entry is not None else None

    def newest(self, account_id: int) -> float | None:
        """When the account's quota was last observed, if ever in this lifecycle."""
        entry = self._accounts.get(account_id)
        return entry.newest if entry is not None else None

    def _counting(self, account_id: int, model: str, now: float) -> Iterable[ObservedWindow]:
        """The fresh main windows that count for a request of ``model`` (QUOTA-3/4)."""
        entry = self._accounts.get(account_id)
        if entry is None:
            return ()
        native = quota_model(model) if model else model
        return [
            observed
            for (window_model, _name), observed in entry.windows.items()
            if observed.window.main
            and window_model in ("", native)
            and is_fresh(observed.observed_at, observed.window.resets_at, now)
        ]

    def exhausted_until(self, account_id: int, model: str) -> float | None:
        """When to look again if the account is out of quota for ``model`` now, else ``None``."""
        now = self._clock.time()
        deadlines = [w.fresh_until for w in self._counting(account_id, model, now) if is_exhausted(w.window)]
        return min(deadlines) if deadlines else None

    def remaining(self, account_id: int, model: str) -> float | None:
        """The remaining fraction (0–1) of the most constrained fresh main window; ``None`` unless
        there is one and every counting window has a number (QW-2)."""
        now = self._clock.time()
        fractions = []
        for observed in self._counting(account_id, model, now):
            used = observed.window.used_percent
            if used is None:
                return None
            fractions.append(max(0.0, min(1.0, 1.0 - used / 100.0)))
        return min(fractions) if fractions else None
