"""COST-4: the digest of a call's prompt prefix tells whether a turn extends the previous one."""

from __future__ import annotations

from typing import Any, NamedTuple

from sublane_core import WireProtocol
from sublane_protocols import prefix_digest


class Digest(NamedTuple):
    length: int
    whole: int
    extends: int | None


SYSTEM = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]


def _user(text: str, *, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    return {"role": "user", "content": [block]}


def _messages(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-6", "system": SYSTEM, "messages": list(items)}


def _digest(protocol: WireProtocol, body: dict[str, Any], previous: Digest | None = None) -> Digest:
    return Digest(*prefix_digest(protocol, body, previous.length if previous is not None else None))


def test_cost_4_a_later_turn_extends_the_previous_even_when_breakpoints_moved() -> None:
    first = _digest(WireProtocol.MESSAGES, _messages(_user("hi", marked=True)))
    assert first.extends is None
    answer = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    later = _messages(_user("hi"), answer, _user("go on", marked=True))
    second = _digest(WireProtocol.MESSAGES, later, first)
    assert second.extends == first.whole and second.length > first.length
    third = _digest(WireProtocol.MESSAGES, _messages(_user("hi"), answer, _user("go on"), answer), second)
    assert third.extends == second.whole
    assert _digest(WireProtocol.MESSAGES, later, second).extends == second.whole  # the same turn again


def test_cost_4_an_edited_item_or_head_does_not_extend() -> None:
    first = _digest(WireProtocol.MESSAGES, _messages(_user("hi"), _user("more")))
    edited = _digest(WireProtocol.MESSAGES, _messages(_user("hi"), _user("less"), _user("x")), first)
    assert edited.extends != first.whole
    longer_item = _digest(WireProtocol.MESSAGES, _messages(_user("hi"), _user("more and more")), first)
    assert longer_item.extends != first.whole  # an item is never a byte prefix of a longer one
    other_system = {**_messages(_user("hi"), _user("more"), _user("x")), "system": "changed"}
    assert _digest(WireProtocol.MESSAGES, other_system, first).extends != first.whole
    shorter = _digest(WireProtocol.MESSAGES, _messages(_user("hi")), first)
    assert shorter.extends is None  # compacted: fewer items than before


def test_cost_4_each_protocol_has_its_head_and_items() -> None:
    responses = {"instructions": "be brief", "input": [{"role": "user", "content": "a"}]}
    grown = {**responses, "input": [*responses["input"], {"role": "user", "content": "b"}]}
    first = _digest(WireProtocol.RESPONSES, responses)
    assert _digest(WireProtocol.RESPONSES, grown, first).extends == first.whole
    assert _digest(WireProtocol.RESPONSES, {**grown, "instructions": "x"}, first).extends != first.whole
    text = _digest(WireProtocol.RESPONSES, {"input": "just text"})
    assert (
        _digest(WireProtocol.RESPONSES, {"input": ["just text", {"role": "user"}]}, text).extends
        == text.whole
    )
    gemini = {"contents": [{"role": "user", "parts": [{"text": "a"}]}]}
    wrapped = {"generateContentRequest": gemini}
    assert _digest(WireProtocol.GEMINI, gemini) == _digest(WireProtocol.GEMINI, wrapped)
    chat = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}
    more = {"messages": [*chat["messages"], {"role": "assistant", "content": "v"}]}
    before = _digest(WireProtocol.CHAT_COMPLETIONS, chat)
    assert _digest(WireProtocol.CHAT_COMPLETIONS, more, before).extends == before.whole
