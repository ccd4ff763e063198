"""Type checks of known fields (OPS-1): the first wrong one is named, unknown fields pass."""

from __future__ import annotations

from sublane_core import WireProtocol
from sublane_protocols import body_field_problem


def test_ops_1_known_fields_of_the_wrong_type_are_named() -> None:
    ok = {"model": "m", "input": "hi", "reasoning": {"effort": "high"}, "anything": {"else": 5}}
    assert body_field_problem(WireProtocol.RESPONSES, ok) is None
    assert body_field_problem(WireProtocol.RESPONSES, {**ok, "reasoning": None}) is None  # null: not set
    assert (
        body_field_problem(WireProtocol.RESPONSES, {**ok, "temperature": 1}) is None
    )  # an integer is a number
    assert body_field_problem(WireProtocol.RESPONSES, {**ok, "reasoning": 5}) == (
        "reasoning",
        "'reasoning' must be an object, not an integer.",
    )
    assert body_field_problem(WireProtocol.RESPONSES, {**ok, "reasoning": {"effort": []}}) == (
        "reasoning.effort",
        "'reasoning.effort' must be a string, not an array.",
    )
    assert body_field_problem(WireProtocol.RESPONSES, {**ok, "max_output_tokens": True}) is not None
    bad_item = {"model": "m", "messages": [{"role": "user", "content": "hi"}, "hi"]}
    assert body_field_problem(WireProtocol.CHAT_COMPLETIONS, bad_item) == (
        "messages[1]",
        "'messages[1]' must be an object, not a string.",
    )
    bad_tool = {"model": "m", "input": "hi", "tools": [{"type": "function", "name": 5}]}
    assert body_field_problem(WireProtocol.RESPONSES, bad_tool) == (
        "tools[0].name",
        "'tools[0].name' must be a string, not an integer.",
    )
    gemini = {"contents": [], "generationConfig": {"thinkingConfig": {"thinkingBudget": 1.5}}}
    assert body_field_problem(WireProtocol.GEMINI, gemini) == (
        "generationConfig.thinkingConfig.thinkingBudget",
        "'generationConfig.thinkingConfig.thinkingBudget' must be an integer, not a number.",
    )
    assert body_field_problem(WireProtocol.MESSAGES, {"model": "m", "max_tokens": "16"}) is not None
