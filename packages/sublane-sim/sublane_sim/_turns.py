"""One model request in flight: counted while it runs, finalized exactly once."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

from ._accounts import Account
from ._records import AccountCounters, RequestRecord
from ._script import Behaviour

__all__ = ["Turn", "Usage"]


@dataclass(slots=True)
class Usage:
    """Token counts in neutral terms; each provider renders them with its own semantics."""

    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_creation_tokens: int = 0
    cache_creation_1h_tokens: int = 0  # the part of the writes kept for one hour (Claude's ttl "1h")


@dataclass(slots=True)
class Turn:
    """A model request that passed authentication and got a behaviour.

    While open it counts in `current_streams`; `finish()` records the outcome and releases it once,
    however the request ends (completion, fault, client cancellation).
    """

    record: RequestRecord
    account: Account
    counters: AccountCounters
    behaviour: Behaviour
    model: str
    rng: random.Random
    lock: threading.RLock
    quota_window: str | None = None
    usage: Usage | None = None
    finished: bool = field(default=False)

    def open(self) -> None:
        with self.lock:
            self.counters.model_requests += 1
            self.counters.current_streams += 1
            self.counters.peak_streams = max(self.counters.peak_streams, self.counters.current_streams)
            self.record.behaviour = self.behaviour.kind

    def finish(self, outcome: str, status: int | None = None) -> None:
        with self.lock:
            if self.finished:
                return
            self.finished = True
            self.counters.current_streams -= 1
            if outcome == "canceled":
                self.counters.cancellations += 1
            elif outcome in ("completed", "incomplete"):
                self.counters.completed += 1
            self.record.outcome = outcome
            if status is not None:
                self.record.status = status
            if self.usage is not None and outcome in ("completed", "incomplete"):
                self.record.input_tokens = self.usage.prompt_tokens
                self.record.cached_tokens = self.usage.cached_tokens
                self.record.output_tokens = self.usage.output_tokens
