"""The latest quota of every account, in memory, as selection reads it (QUOTA-2…5, QW-1).

The book only ever holds what the store has saved (QUOTA-8: saved before published). Each window
keeps the time it was observed; a newer observation of a window replaces it, an older one (a
refresh that was already running when a newer answer arrived) is ignored, and everything of an
earlier account lifecycle is dropped (disable/enable, re-authorization).

Selection asks two questions, of every candidate account on every model request:

- :meth:`QuotaBook.exhausted_until`: is the account out of quota for this model — an explicit
  denial, a reached-limit flag or a main window at 100 % — by a **fresh** observation? The answer
  is the time to look again (the earliest freshness deadline of those windows).
- :meth:`QuotaBook.remaining`: the remaining fraction of the most constrained fresh main window,
  when every such window is complete (QW-1/2).

Both answers are remembered per account and native model until the next time any of the
account's windows for it changes its freshness (or a new observation arrives), so asking costs a
dictionary lookup however many windows the account has (issue #19: selection over a pool asks once
per account per request).

Windows count only when ``main`` (QUOTA-4: additional named limits never exclude) and when they
belong to the whole account (``model == ""``: Codex, Claude) or to exactly the requested model
(Antigravity, thinking suffixes normalized).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sublane_core import Clock, signals
from sublane_quota._freshness import FUTURE_TOLERANCE_S, fresh_until, is_exhausted, is_fresh
from sublane_quota._models import quota_model

_FOREVER = float("inf")


@dataclass(frozen=True, slots=True)
class ObservedWindow:
    """One window as last observed."""

    window: signals.QuotaWindow
    observed_at: float

    @property
    def fresh_until(self) -> float:
        return fresh_until(self.observed_at, self.window.resets_at)


@dataclass(frozen=True, slots=True)
class _Answers:
    """What selection asks of one account and native model, and for how long it holds."""

    computed_at: float
    valid_until: float  # the first moment one of the counting windows changes its freshness
    exhausted_until: float | None
    remaining: float | None


@dataclass(slots=True)
class _AccountQuota:
    revision: int
    plan: str | None = None
    windows: dict[tuple[str, str], ObservedWindow] = field(default_factory=dict)  # (model, window)
    newest: float | None = None  # the latest ``observed_at`` of the windows
    answers: dict[str, _Answers] = field(default_factory=dict)  # by native model ("": account-wide)

    def answers_for(self, native: str, now: float) -> _Answers:
        known = self.answers.get(native)
        if known is not None and known.computed_at <= now < known.valid_until:
            return known
        answers = self._answer(native, now)
        self.answers[native] = answers
        return answers

    def _answer(self, native: str, now: float) -> _Answers:
        """QUOTA-3/4 and QW-2 over the fresh main windows that count for ``native`` now."""
        valid_until = _FOREVER
        deadlines: list[float] = []
        fractions: list[float] = []
        complete = True
        for (window_model, _name), observed in self.windows.items():
            window = observed.window
            if not window.main or window_model not in ("", native):
                continue
            if observed.observed_at > now + FUTURE_TOLERANCE_S:  # counts once the clock catches up
                valid_until = min(valid_until, observed.observed_at - FUTURE_TOLERANCE_S)
                continue
            if not is_fresh(observed.observed_at, window.resets_at, now):
                continue  # stale for good (time only moves on)
            until = observed.fresh_until
            valid_until = min(valid_until, until)
            if is_exhausted(window):
                deadlines.append(until)
            if window.used_percent is None:
                complete = False
            else:
                fractions.append(max(0.0, min(1.0, 1.0 - window.used_percent / 100.0)))
        return _Answers(
            computed_at=now,
            valid_until=valid_until,
            exhausted_until=min(deadlines) if deadlines else None,
            remaining=min(fractions) if fractions and complete else None,
        )


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
        observed_at = observation.observed_at
        for window in observation.windows:
            key = (window.model, window.window)
            known = entry.windows.get(key)
            if known is None or known.observed_at <= observed_at:
                entry.windows[key] = ObservedWindow(window, observed_at)
                if entry.newest is None or observed_at > entry.newest:
                    entry.newest = observed_at
                entry.answers.clear()
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

    def exhausted_until(self, account_id: int, model: str) -> float | None:
        """When to look again if the account is out of quota for ``model`` now, else ``None``."""
        entry = self._accounts.get(account_id)
        if entry is None:
            return None
        return entry.answers_for(_native(model), self._clock.time()).exhausted_until

    def remaining(self, account_id: int, model: str) -> float | None:
        """The remaining fraction (0–1) of the most constrained fresh main window; ``None`` unless
        there is one and every counting window has a number (QW-2)."""
        entry = self._accounts.get(account_id)
        if entry is None:
            return None
        return entry.answers_for(_native(model), self._clock.time()).remaining


_NATIVE: dict[str, str] = {}


def _native(model: str) -> str:
    """:func:`quota_model`, remembered: a request's model name is one of a few."""
    native = _NATIVE.get(model)
    if native is None:
        if len(_NATIVE) >= 4096:  # client-chosen names: bounded
            _NATIVE.clear()
        native = _NATIVE[model] = quota_model(model) if model else model
    return native
