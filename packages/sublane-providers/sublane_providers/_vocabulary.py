"""What a provider knows of its upstream's answers (CLIENT-7), declared as data in its own package.

Upstreams change every week: a new SSE event type, a new top-level field in an answer or a
terminal event, a new error type, a new model in a catalogue. SubLane relays all of it as before;
the gateway compares what it sees anyway against a provider's :class:`UpstreamVocabulary` and tells
the operator about anything new. Comparing costs a set lookup where a name is already at hand
(an event's name line, the keys of a JSON object the pipeline decodes anyway): nothing is parsed
for the watch alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

#: The kinds of names the watch tells about (``sublane_upstream_unknown_total{kind}``).
KIND_EVENT: Final = "event"  # an SSE event type (its ``event:`` name)
KIND_ANSWER_FIELD: Final = "answer_field"  # a top-level field of a JSON answer
KIND_TERMINAL_FIELD: Final = "terminal_field"  # a top-level field of the event that ended a stream
KIND_ERROR: Final = "error"  # an error type or code, in an error answer or a stream's error event
KIND_MODEL: Final = "model"  # a model in an account's catalogue
KIND_CLIENT_VERSION: Final = "client_version"  # a client version an upstream asked for (CLIENT-3)
UNKNOWN_KINDS: Final = (
    KIND_EVENT,
    KIND_ANSWER_FIELD,
    KIND_TERMINAL_FIELD,
    KIND_ERROR,
    KIND_MODEL,
    KIND_CLIENT_VERSION,
)


@dataclass(frozen=True, slots=True)
class UpstreamVocabulary:
    """The names a provider's upstream is known to answer with.

    ``events``: SSE event names (a stream whose events have no names declares none, and a named
    event from it is news). ``answer_fields``/``terminal_fields``: top-level keys of a JSON answer
    and of the decoded event that ended a stream. ``error_codes``: the codes
    :meth:`~sublane_providers.ProviderAdapter.classify_failure` and the stream observer report
    (``http_<status>``, made up when an answer names none, is never news). ``models``: model ids
    of its catalogue, beside the adapter's ``fallback_models``.
    """

    events: frozenset[str] = frozenset()
    answer_fields: frozenset[str] = frozenset()
    terminal_fields: frozenset[str] = frozenset()
    error_codes: frozenset[str] = frozenset()
    models: frozenset[str] = frozenset()

    @staticmethod
    def of(*names: str | Iterable[str]) -> frozenset[str]:
        """A frozen set of names given one by one or as collections."""
        found: set[str] = set()
        for name in names:
            if isinstance(name, str):
                found.add(name)
            else:
                found.update(name)
        return frozenset(found)

    def adding(
        self,
        *,
        events: Iterable[str] = (),
        answer_fields: Iterable[str] = (),
        terminal_fields: Iterable[str] = (),
        error_codes: Iterable[str] = (),
        models: Iterable[str] = (),
    ) -> UpstreamVocabulary:
        """This vocabulary and the names one upstream adds to it (a public API's vocabulary and a
        provider's extras, ``sublane_providers.RESPONSES_VOCABULARY`` and its kin)."""
        return UpstreamVocabulary(
            events=self.events | frozenset(events),
            answer_fields=self.answer_fields | frozenset(answer_fields),
            terminal_fields=self.terminal_fields | frozenset(terminal_fields),
            error_codes=self.error_codes | frozenset(error_codes),
            models=self.models | frozenset(models),
        )


@runtime_checkable
class DeclaresVocabulary(Protocol):
    """A provider whose upstream's answers are watched for what SubLane does not know (CLIENT-7)."""

    @property
    def vocabulary(self) -> UpstreamVocabulary:
        """What its upstream is known to answer with."""
        ...
