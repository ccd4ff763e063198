"""COST-4: the digest of a call's prompt prefix tells whether a turn extends the previous one."""

from __future__ import annotations

from typing import Any, NamedTuple

from sublane_core import WireProtocol
from sublane_protocols import prefix_digest


class Digest(NamedTuple):
    count: int
    whole: bytes
    extends: bytes | None


SYSTEM = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]


def _user(text: str, *, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    return {"role": "user", "content": [block]}


def _messages(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-6", "system": SYSTEM, "messages": list(items)}


def test_cost_4_a_later_turn_extends_the_previous_even_when_breakpoints_moved() -> None:
    first = Digest(*prefix_digest(WireProtocol.MESSAGES, _messages(_user("hi", marked=True)), None))
    assert first.count == 1 and first.extends is None
    answer = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    later = _messages(_user("hi"), answer, _user("go on", marked=True))
    second = Digest(*prefix_digest(WireProtocol.MESSAGES, later, first.count))
    assert second.extends == first.whole and second.count == 3


def test_cost_4_an_edited_item_or_head_does_not_extend() -> None:
    first = Digest(*prefix_digest(WireProtocol.MESSAGES, _messages(_user("hi"), _user("more")), None))
    edited = Digest(
        *prefix_digest(WireProtocol.MESSAGES, _messages(_user("hi"), _user("less"), _user("x")), 2)
    )
    assert edited.extends != first.whole
    other_system = {**_messages(_user("hi"), _user("more"), _user("x")), "system": "changed"}
    assert prefix_digest(WireProtocol.MESSAGES, other_system, 2)[2] != first.whole
    shorter = Digest(*prefix_digest(WireProtocol.MESSAGES, _messages(_user("hi")), 2))
    assert shorter.extends is None  # compacted: fewer items than before


def test_cost_4_each_protocol_has_its_head_and_items() -> None:
    responses = {"instructions": "be brief", "input": [{"role": "user", "content": "a"}]}
    grown = {**responses, "input": [*responses["input"], {"role": "user", "content": "b"}]}
    first = Digest(*prefix_digest(WireProtocol.RESPONSES, responses, None))
    assert prefix_digest(WireProtocol.RESPONSES, grown, 1)[2] == first.whole
    assert prefix_digest(WireProtocol.RESPONSES, {**grown, "instructions": "x"}, 1)[2] != first.whole
    assert prefix_digest(WireProtocol.RESPONSES, {"input": "just text"}, None)[0] == 1
    gemini = {"contents": [{"role": "user", "parts": [{"text": "a"}]}]}
    wrapped = {"generateContentRequest": gemini}
    assert prefix_digest(WireProtocol.GEMINI, gemini, None) == prefix_digest(
        WireProtocol.GEMINI, wrapped, None
    )
    chat = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}
    assert prefix_digest(WireProtocol.CHAT_COMPLETIONS, chat, None)[0] == 2
