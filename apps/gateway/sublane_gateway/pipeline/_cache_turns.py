"""Why a later turn of a conversation missed the upstream's prompt cache (COST-4).

For each conversation (group, conversation key and model: a cache holds one model's prefixes) the
gateway remembers its previous turn: the account that served it, when it began, the prompt-cache
lifetime its provider gave it, and the length and checksum of its prefix
(:func:`sublane_protocols.prefix_digest` — never the prompt). A turn whose hit rate is under
50 % gets the first reason that holds:

- ``first_turn``: no previous turn is known;
- ``account_changed``: the previous turn was served by another account (the binding moved);
- ``prefix_changed``: this turn's head and first items are not the previous turn's;
- ``expired``: it began longer after the previous turn than the provider's cache lifetime;
- ``unknown``: none of these.

The memory is an LRU bounded by count (:data:`MAX_CONVERSATIONS`, about 250 bytes each). With
replicas (SCALE-2) each turn stored is published to the others (:meth:`ConversationTurns.apply`), so
a conversation whose turns alternate between replicas is judged against its real previous turn.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from sublane_core import Outcome, WireProtocol, immutable
from sublane_history import MISS_BELOW, hit_rate
from sublane_protocols import prefix_digest

MAX_CONVERSATIONS: Final = 100_000
#: The lifetime assumed when no adapter named one (the call never reached an upstream).
DEFAULT_LIFETIME_S: Final = 300.0
_SERVED: Final = frozenset({Outcome.SUCCESS, Outcome.INCOMPLETE})


@immutable
class PreviousTurn:
    """What is remembered of a conversation's last served turn."""

    account_id: int
    at: float  # wall-clock seconds when it began
    lifetime_s: float
    length: int  # of its items' bytes
    digest: int  # the checksum of its head and items


@immutable
class TurnNote:
    """A turn as it began: its conversation, what was known of the previous turn then, and its
    prefix digested against it."""

    key: bytes
    previous: PreviousTurn | None
    extends: bool
    length: int
    digest: int


def conversation_id(group_id: int | None, conversation_key: str, model: str) -> bytes:
    """The remembered key: a digest of group, conversation key and model (the key itself is a
    session identifier, never kept)."""
    text = f"{group_id if group_id is not None else 0}\x00{conversation_key}\x00{model}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def miss_reason(
    note: TurnNote, account_id: int, at: float, input_tokens: int | None, cached_tokens: int | None
) -> str | None:
    """COST-4's reason, or ``None`` when the turn hit (or reported no cache figures)."""
    if cached_tokens is None:  # no cache figures: decided without computing a rate
        return None
    rate = hit_rate(input_tokens, cached_tokens)
    if rate is None or rate >= MISS_BELOW:
        return None
    previous = note.previous
    if previous is None:
        return "first_turn"
    if previous.account_id != account_id:
        return "account_changed"
    if not note.extends:
        return "prefix_changed"
    if at - previous.at > previous.lifetime_s:
        return "expired"
    return "unknown"


class ConversationTurns:
    """The previous turn of each conversation, bounded by count (least recently used goes)."""

    def __init__(self, max_conversations: int = MAX_CONVERSATIONS) -> None:
        self._max = max_conversations
        self._turns: OrderedDict[bytes, PreviousTurn] = OrderedDict()
        #: With replicas: told each turn stored here, to publish it (:meth:`apply` on the others).
        self.on_stored: Callable[[bytes, PreviousTurn], None] | None = None

    def __len__(self) -> int:
        return len(self._turns)

    def begin(
        self,
        group_id: int | None,
        conversation_key: str,
        model: str,
        protocol: WireProtocol,
        body: Mapping[str, Any],
        *,
        continuation: bool = False,
    ) -> TurnNote:
        """Note a turn as it begins. ``continuation``: it continues upstream state
        (``previous_response_id``), so it extends the previous turn whatever its items."""
        key = conversation_id(group_id, conversation_key, model)
        previous = self._turns.get(key)
        if previous is None:
            length, whole, _extends = prefix_digest(protocol, body, None)
            return TurnNote(key, None, continuation, length, whole)
        length, whole, extends = prefix_digest(protocol, body, previous.length)
        return TurnNote(key, previous, continuation or extends == previous.digest, length, whole)

    def finish(
        self,
        note: TurnNote,
        *,
        account_id: int,
        at: float,
        lifetime_s: float | None,
        outcome: Outcome,
        input_tokens: int | None,
        cached_tokens: int | None,
    ) -> str | None:
        """The turn's miss reason; a served turn becomes its conversation's previous turn."""
        reason = miss_reason(note, account_id, at, input_tokens, cached_tokens)
        if outcome in _SERVED:
            turn = PreviousTurn(
                account_id,
                at,
                lifetime_s if lifetime_s is not None else DEFAULT_LIFETIME_S,
                note.length,
                note.digest,
            )
            self._store(note.key, turn)
            if self.on_stored is not None:
                self.on_stored(note.key, turn)
        return reason

    def apply(self, key: bytes, turn: PreviousTurn) -> None:
        """A turn another replica stored (kept unless this replica knows a later one)."""
        known = self._turns.get(key)
        if known is None or known.at <= turn.at:
            self._store(key, turn)

    def _store(self, key: bytes, turn: PreviousTurn) -> None:
        self._turns[key] = turn
        self._turns.move_to_end(key)
        while len(self._turns) > self._max:
            self._turns.popitem(last=False)


def turn_event(key: bytes, turn: PreviousTurn) -> dict[str, Any]:
    """A stored turn as a coordination event's fields (the conversation's key in hex)."""
    return {
        "key": key.hex(),
        "account_id": turn.account_id,
        "at": turn.at,
        "lifetime_s": turn.lifetime_s,
        "length": turn.length,
        "digest": turn.digest,
    }


def turn_of(event: Mapping[str, Any]) -> tuple[bytes, PreviousTurn]:
    """What a ``cache_turn`` event carries."""
    turn = PreviousTurn(
        int(event["account_id"]),
        float(event["at"]),
        float(event["lifetime_s"]),
        int(event["length"]),
        int(event["digest"]),
    )
    return bytes.fromhex(str(event["key"])), turn
