"""Account and model cooldowns, with the runtime-revision rule (COOL, MCOOL).

- COOL-1: only an upstream 429 cools the whole account, for its ``Retry-After`` (1–3,600 s) or
  the fallback. Deadlines, 408 and network failures never do (COOL-2).
- COOL-4: when a cooldown expires, the account admits one recovery probe (a normal request) while
  nothing else is in flight; success restores normal concurrency, failure cools it again.
- COOL-5: every outcome carries the account's runtime revision at dispatch. Failures and Clear
  cooldown advance the revision; a success from an older revision clears nothing.
- MCOOL-2: ``threshold`` logical failures of (account, model) within ``window`` cool that model
  for ``initial`` seconds, doubling on repeats up to ``max``; a success clears the streak.
- COOL-7: cooldowns are persisted by a writer callback; the in-memory state blocks admission even
  when the write fails.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from sublane_core import ACCOUNT_WIDE, Clock

_log = logging.getLogger("sublane.cooldowns")

MAX_RETRY_AFTER_HINT_S = 3600.0


@dataclass(slots=True)
class Cooldown:
    """One account-wide (``model == ""``) or model cooldown."""

    account_id: int
    model: str
    until: float
    reason: str
    streak: int = 1
    probing: bool = False  # expired, waiting for its recovery probe to succeed (COOL-4)


@dataclass(slots=True)
class _ModelFailures:
    times: deque[float] = field(default_factory=deque)
    streak: int = 0  # consecutive cooldowns, for the escalation


@dataclass(frozen=True, slots=True)
class CooldownPolicy:
    """The MCOOL-2 and COOL-1 numbers (from settings)."""

    fallback_s: float = 5.0
    model_threshold: int = 3
    model_window_s: float = 120.0
    model_initial_s: float = 10.0
    model_max_s: float = 300.0


Persist = Callable[
    [Cooldown | None, int, str, int], None
]  # (cooldown or None=cleared, account, model, revision)


class CooldownBook:
    """Cooldowns and runtime revisions of every account, in memory, persisted through ``persist``."""

    def __init__(self, clock: Clock, policy: CooldownPolicy, persist: Persist | None = None) -> None:
        self._clock = clock
        self.policy = policy
        self._persist = persist
        self._cooldowns: dict[tuple[int, str], Cooldown] = {}
        self._revisions: dict[int, int] = {}
        self._failures: dict[tuple[int, str], _ModelFailures] = {}
        #: With replicas (SCALE-2): told each failure that did not cool the model, and each success
        #: that cleared a model's failures, so every replica counts MCOOL-2's streaks over all.
        self.on_failure: Callable[[int, str, float], None] | None = None
        self.on_cleared: Callable[[int, str], None] | None = None

    # -- reading ----------------------------------------------------------------------------------

    def revision(self, account_id: int) -> int:
        """The account's runtime revision: stamp it on a request at dispatch."""
        return self._revisions.get(account_id, 0)

    def restore(self, cooldown: Cooldown, revision: int) -> None:
        """Load a persisted cooldown at start-up."""
        self._cooldowns[(cooldown.account_id, cooldown.model)] = cooldown
        self._revisions[cooldown.account_id] = max(revision, self._revisions.get(cooldown.account_id, 0))

    def apply(self, cooldown: Cooldown | None, account_id: int, model: str, revision: int) -> None:
        """Take over what another replica decided (SCALE-2): its cooldown of ``(account, model)``,
        or ``None`` when it ended one; its revision, when newer. Never persisted again here."""
        if cooldown is None:
            self._cooldowns.pop((account_id, model), None)
        else:
            self._cooldowns[(account_id, model)] = cooldown
            if cooldown.reason == "model_failures":  # its streak, as the replica that cooled it counts
                record = self._failures.setdefault((account_id, model), _ModelFailures())
                record.times.clear()
                record.streak = cooldown.streak
        self._revisions[account_id] = max(revision, self._revisions.get(account_id, 0))

    def note_failure(self, account_id: int, model: str, at: float) -> None:
        """Another replica's failure of (account, model) that did not cool it: counted here too."""
        record = self._failures.setdefault((account_id, model), _ModelFailures())
        record.times.append(at)
        while record.times and record.times[0] <= at - self.policy.model_window_s:
            record.times.popleft()

    def clear_failures(self, account_id: int, model: str) -> None:
        """Another replica's success cleared the model's failures."""
        self._failures.pop((account_id, model), None)

    def active(self, account_id: int, model: str = ACCOUNT_WIDE) -> Cooldown | None:
        """The cooldown blocking ``(account, model)`` now, if any (expired ones are not returned)."""
        cooldown = self._cooldowns.get((account_id, model))
        if cooldown is None or cooldown.until <= self._clock.time():
            return None
        return cooldown

    def blocking(self, account_id: int, model: str) -> Cooldown | None:
        """The account-wide cooldown, else the model's, that blocks a request now.

        Asked for every candidate of every request: two dictionary reads, the clock only when one
        of them found a cooldown."""
        cooldowns = self._cooldowns
        wide = cooldowns.get((account_id, ACCOUNT_WIDE))
        narrow = cooldowns.get((account_id, model))
        if wide is None and narrow is None:
            return None
        now = self._clock.time()
        if wide is not None and wide.until > now:
            return wide
        if narrow is not None and narrow.until > now:
            return narrow
        return None

    def probe_only(self, account_id: int, model: str) -> bool:
        """Whether the account (or this model on it) is past a cooldown, not yet proven healthy (COOL-4).

        Asked three times a call: as :meth:`blocking`, two dictionary reads, the clock only when one
        of them found a cooldown."""
        cooldowns = self._cooldowns
        wide = cooldowns.get((account_id, ACCOUNT_WIDE))
        narrow = cooldowns.get((account_id, model))
        if wide is None and narrow is None:
            return False
        now = self._clock.time()
        return (wide is not None and wide.until <= now) or (narrow is not None and narrow.until <= now)

    def limited_models(self, account_id: int) -> list[Cooldown]:
        """Model cooldowns of an account still in force."""
        now = self._clock.time()
        return [
            cooldown
            for (account, model), cooldown in self._cooldowns.items()
            if account == account_id and model != ACCOUNT_WIDE and cooldown.until > now
        ]

    def retry_after(self, cooldown: Cooldown) -> float:
        """A bounded ``Retry-After`` for a cooldown (COOL-3)."""
        return max(1.0, min(cooldown.until - self._clock.time(), MAX_RETRY_AFTER_HINT_S))

    # -- outcomes ---------------------------------------------------------------------------------

    def rate_limited(
        self, account_id: int, retry_after_s: float | None, reason: str = "rate_limited"
    ) -> Cooldown:
        """An upstream 429: cool the whole account (COOL-1) and advance its revision."""
        seconds = retry_after_s if retry_after_s is not None and 1 <= retry_after_s <= 3600 else None
        key = (account_id, ACCOUNT_WIDE)
        previous = self._cooldowns.get(key)
        cooldown = Cooldown(
            account_id,
            ACCOUNT_WIDE,
            self._clock.time() + (seconds if seconds is not None else self.policy.fallback_s),
            reason,
            streak=(previous.streak + 1) if previous else 1,
        )
        self._cooldowns[key] = cooldown
        self._bump(account_id)
        self._save(cooldown, account_id, ACCOUNT_WIDE)
        return cooldown

    def model_limited(
        self, account_id: int, model: str, retry_after_s: float | None, reason: str
    ) -> Cooldown:
        """A provider's own model-scoped limit (AGL-1): cool that model only."""
        seconds = retry_after_s if retry_after_s is not None and retry_after_s > 0 else self.policy.fallback_s
        cooldown = Cooldown(account_id, model, self._clock.time() + min(seconds, 3600.0), reason)
        self._cooldowns[(account_id, model)] = cooldown
        self._bump(account_id)
        self._save(cooldown, account_id, model)
        return cooldown

    def failed(self, account_id: int, model: str, revision: int) -> Cooldown | None:
        """A transient failure of (account, model) (MCOOL-1); returns the cooldown it caused, if any."""
        self._bump(account_id)
        now = self._clock.time()
        probing = self._cooldowns.get((account_id, ACCOUNT_WIDE))
        if probing is not None and probing.until <= now:  # the recovery probe failed: cool again
            return self.rate_limited(account_id, None, probing.reason)
        policy = self.policy
        if policy.model_threshold <= 0:
            return None
        record = self._failures.setdefault((account_id, model), _ModelFailures())
        record.times.append(now)
        while record.times and record.times[0] <= now - policy.model_window_s:
            record.times.popleft()
        existing = self._cooldowns.get((account_id, model))
        expired_probe = existing is not None and existing.until <= now
        if len(record.times) < policy.model_threshold and not expired_probe:
            if self.on_failure is not None:
                self.on_failure(account_id, model, now)
            return None
        record.times.clear()
        record.streak += 1
        duration = min(policy.model_initial_s * (2 ** (record.streak - 1)), policy.model_max_s)
        cooldown = Cooldown(account_id, model, now + duration, "model_failures", streak=record.streak)
        self._cooldowns[(account_id, model)] = cooldown
        self._save(cooldown, account_id, model)
        return cooldown

    def succeeded(self, account_id: int, model: str, revision: int) -> bool:
        """A normal success: clears expired cooldowns and the model's streak, unless outdated (COOL-5)."""
        if revision < self.revision(account_id):
            return False
        now = self._clock.time()
        for key in ((account_id, ACCOUNT_WIDE), (account_id, model)):
            cooldown = self._cooldowns.get(key)
            if cooldown is not None and cooldown.until <= now:
                del self._cooldowns[key]
                self._save(None, account_id, key[1])
        if self._failures.pop((account_id, model), None) is not None and self.on_cleared is not None:
            self.on_cleared(account_id, model)
        return True

    def clear(self, account_id: int) -> None:
        """Clear cooldown (COOL-6): every cooldown and streak of the account; the revision advances."""
        for key in [key for key in self._cooldowns if key[0] == account_id]:
            del self._cooldowns[key]
            self._save(None, account_id, key[1])
        for key in [key for key in self._failures if key[0] == account_id]:
            del self._failures[key]
        self._bump(account_id)

    def clear_model_limits(self, account_id: int) -> None:
        """Drop the provider's model limits of an account (AGL-2: a new account lifecycle, e.g.
        after re-authorization or disable/enable, starts without them); the revision advances."""
        for key, cooldown in list(self._cooldowns.items()):
            if key[0] == account_id and key[1] != ACCOUNT_WIDE and cooldown.reason.startswith("provider:"):
                del self._cooldowns[key]
                self._save(None, account_id, key[1])
        self._bump(account_id)

    def forget(self, account_id: int) -> None:
        """Drop everything of a deleted account."""
        for key in [key for key in self._cooldowns if key[0] == account_id]:
            del self._cooldowns[key]
        for key in [key for key in self._failures if key[0] == account_id]:
            del self._failures[key]
        self._revisions.pop(account_id, None)

    # -- internals --------------------------------------------------------------------------------

    def _bump(self, account_id: int) -> None:
        self._revisions[account_id] = self._revisions.get(account_id, 0) + 1

    def _save(self, cooldown: Cooldown | None, account_id: int, model: str) -> None:
        if self._persist is None:
            return
        try:
            self._persist(cooldown, account_id, model, self.revision(account_id))
        except Exception as exc:  # COOL-7: memory still blocks; the failure is logged, sanitized
            _log.error("could not store the cooldown of account %s: %s", account_id, type(exc).__name__)
