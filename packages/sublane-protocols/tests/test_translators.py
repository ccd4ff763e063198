"""The translator registry: which (client, upstream) pairs SubLane can serve, and with what (XLAT-1).

Every protocol passes through to itself; every client protocol is served by each of the four
upstream protocols (Responses = Codex, Messages = Claude, Gemini = Antigravity, Chat Completions =
any OpenAI-compatible server) through a hub cell.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from sublane_core import Dialect, WireProtocol
from sublane_protocols import (
    HubTranslator,
    TranslationRefused,
    Translator,
    can_serve,
    translator_for,
    upstream_side,
)
from sublane_protocols.chat import ChatFrames, ChatOverResponses

PROTOCOLS = tuple(WireProtocol)
UPSTREAMS = tuple(WireProtocol)  # Responses, Messages, Gemini, Chat Completions
TRANSLATED = {
    (client, upstream): HubTranslator for client in PROTOCOLS for upstream in UPSTREAMS if client != upstream
}  # the twelve translated cells of the 16-cell matrix (four are pass-through)
#: What the registry answers for every ordered pair of protocols.
REGISTERED = {
    (client, upstream): translator
    for client, upstream in itertools.product(PROTOCOLS, repeat=2)
    if (translator := translator_for(client, upstream)) is not None
}


def test_the_protocols_are_the_four_client_protocols() -> None:
    assert {protocol.value for protocol in PROTOCOLS} == {
        "responses",
        "chat_completions",
        "messages",
        "gemini",
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_xlat_1_a_protocol_passes_through_to_itself_without_a_translator(protocol: WireProtocol) -> None:
    assert can_serve(protocol, protocol)
    assert translator_for(protocol, protocol) is None


@pytest.mark.parametrize(("client", "upstream"), list(TRANSLATED), ids=lambda p: p.value)
def test_translated_pairs_are_servable_by_their_translator(
    client: WireProtocol, upstream: WireProtocol
) -> None:
    translator = translator_for(client, upstream)
    assert isinstance(translator, TRANSLATED[(client, upstream)])
    assert can_serve(client, upstream)


def test_chat_completions_client_is_served_by_a_responses_upstream() -> None:
    assert can_serve(WireProtocol.CHAT_COMPLETIONS, WireProtocol.RESPONSES)
    assert isinstance(translator_for(WireProtocol.CHAT_COMPLETIONS, WireProtocol.RESPONSES), HubTranslator)


def test_paid_1_every_client_protocol_reaches_a_chat_completions_upstream() -> None:
    for client in PROTOCOLS:
        assert can_serve(client, WireProtocol.CHAT_COMPLETIONS)
    # A Chat Completions client on a Chat Completions upstream passes through untouched.
    assert translator_for(WireProtocol.CHAT_COMPLETIONS, WireProtocol.CHAT_COMPLETIONS) is None


def test_every_pair_of_protocols_is_served() -> None:
    assert all(can_serve(client, upstream) for client, upstream in itertools.permutations(PROTOCOLS, 2))


def test_xlat_1_the_matrix_has_twelve_translated_cells() -> None:
    assert len(TRANSLATED) == 12


def test_the_registry_holds_exactly_the_known_translators() -> None:
    assert {pair: type(translator) for pair, translator in REGISTERED.items()} == TRANSLATED


@pytest.mark.parametrize(
    ("pair", "translator"),
    list(REGISTERED.items()),
    ids=[f"{client.value}-on-{upstream.value}" for client, upstream in REGISTERED],
)
def test_every_registered_translator_is_keyed_by_its_own_client_and_upstream(
    pair: tuple[WireProtocol, WireProtocol], translator: Translator
) -> None:
    assert isinstance(translator, Translator)
    assert (translator.client, translator.upstream) == pair
    assert translator.client != translator.upstream  # a pass-through needs no translator


# --- ChatOverResponses as a Translator ----------------------------------------------------------------

_CREATE_PARAMS = TypeAdapter(ResponseCreateParamsStreaming)


def test_chat_over_responses_request_keeps_the_prompt_cache_key() -> None:
    translator = ChatOverResponses()
    body = {
        "model": "gpt-5-codex",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "prompt_cache_key": "01a2283c-fe10-78d1-9925-517e047c31b5",
        "stream": True,
    }
    request = translator.request(body)
    assert request["prompt_cache_key"] == "01a2283c-fe10-78d1-9925-517e047c31b5"
    assert request["model"] == "gpt-5-codex" and request["instructions"] == "Be brief."
    assert request["store"] is False and request["stream"] is True
    _CREATE_PARAMS.validate_python({key: value for key, value in request.items() if key != "input"})


@pytest.mark.parametrize("key", [None, "", 7])
def test_chat_over_responses_request_without_a_usable_prompt_cache_key(key: object) -> None:
    body = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}], "prompt_cache_key": key}
    assert "prompt_cache_key" not in ChatOverResponses().request(body)


@pytest.mark.parametrize(
    ("field", "value"),
    [("n", 2), ("logprobs", True), ("functions", [{"name": "f"}])],
)
def test_chat_over_responses_refuses_with_translation_refused_naming_the_field(
    field: str, value: object
) -> None:
    body = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}], field: value}
    with pytest.raises(TranslationRefused) as caught:
        ChatOverResponses().request(body)
    refused = caught.value
    assert refused.code == "invalid_request"
    assert refused.param == field
    assert refused.message and str(refused) == refused.message


def test_chat_over_responses_new_stream_is_a_stream_translator() -> None:
    body = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    frames = ChatOverResponses().new_stream(body, model="gpt-5-codex", created=1)
    assert isinstance(frames, ChatFrames)
    assert frames.finished is False
    assert frames.feed({"type": "response.in_progress"}) == b""


#: An upstream of the hub's own protocol that has no stop sequences and refuses sampling settings
#: (the shape of the ChatGPT backend's dialect, written here as data).
NO_STOP = Dialect(
    refused=(("stop", "Stop sequences are not supported by this model's provider."),),
    dropped=frozenset({"temperature", "top_p", "max_output_tokens", "stop"}),
    required=(("store", False), ("stream", True)),
)


def test_xlat_3_stop_sequences_refused_for_an_upstream_whose_dialect_refuses_them() -> None:
    body = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}], "stop": ["\n"]}
    with pytest.raises(TranslationRefused) as caught:
        ChatOverResponses().request(body, NO_STOP)
    assert (caught.value.code, caught.value.param) == ("unsupported_for_provider", "stop")
    assert ChatOverResponses().request(body)["stop"] == ["\n"]  # a plain upstream carries them


def test_xlat_2_chat_sampling_reaches_the_hub_and_a_dialect_drops_what_its_upstream_refuses() -> None:
    body = {
        "model": "gpt-5-codex",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 100,
        "stop": "END",
    }
    translator = ChatOverResponses()
    hub = translator.to_responses(body)
    assert (hub["temperature"], hub["top_p"], hub["max_output_tokens"], hub["stop"]) == (
        0.2,
        0.9,
        100,
        ["END"],
    )
    request = translator.request({k: v for k, v in body.items() if k != "stop"}, NO_STOP)
    assert not {"temperature", "top_p", "max_output_tokens", "stop"} & set(request)
    assert (request["store"], request["stream"]) == (False, True)  # what the dialect requires


def test_xlat_2_a_mid_conversation_system_message_of_claude_code_is_kept_as_instructions() -> None:
    translator = translator_for(WireProtocol.MESSAGES, WireProtocol.RESPONSES)
    assert translator is not None
    body = {
        "model": "gpt-5-codex",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "again"},
        ],
    }
    request = translator.request(body)
    roles = [item.get("role") for item in request["input"] if item.get("type") == "message"]
    assert roles == ["user", "developer", "user"]


_UNHASHABLE_TYPES = ([], {}, [1], ["input_text"])
_TYPE_CONFUSED_ITEMS = [
    *({"input": [{"type": kind, "role": "user", "content": "hi"}]} for kind in _UNHASHABLE_TYPES),
    *(
        {"input": [{"type": "message", "role": role, "content": [{"type": kind, "text": "hi"}]}]}
        for kind in _UNHASHABLE_TYPES
        for role in ("user", "assistant")
    ),
]
_TYPE_CONFUSED_TOOLS = [
    {"input": "hi", "tools": [{"type": [], "name": "f"}]},
    {"input": "hi", "tools": [{"type": {}, "name": "f"}], "tool_choice": {"type": []}},
]
_TRANSLATED_UPSTREAMS = [
    p for p in PROTOCOLS if p is not WireProtocol.RESPONSES and upstream_side(p) is not None
]


@pytest.mark.parametrize("upstream", _TRANSLATED_UPSTREAMS, ids=lambda p: p.value)
@pytest.mark.parametrize("body", _TYPE_CONFUSED_ITEMS, ids=lambda b: json.dumps(b)[:70])
def test_xlat_3_an_item_or_part_type_that_is_not_a_string_is_refused_as_invalid(
    upstream: WireProtocol, body: dict[str, Any]
) -> None:
    """A ``type`` given as a list or an object is the client's mistake: refused as invalid (a 400
    in the client's shape), never a TypeError from a set lookup (a 500)."""
    side = upstream_side(upstream)
    assert side is not None
    with pytest.raises(TranslationRefused) as refused:
        side.request_from_responses({"model": "m", **body})
    assert refused.value.code == "invalid_request"
    assert refused.value.param is not None and refused.value.param.startswith("input[0]")
    assert "None" not in refused.value.message  # says what is wrong, not the value it was read as


@pytest.mark.parametrize("upstream", _TRANSLATED_UPSTREAMS, ids=lambda p: p.value)
@pytest.mark.parametrize("body", _TYPE_CONFUSED_TOOLS, ids=lambda b: json.dumps(b)[:70])
def test_xlat_3_a_tool_type_that_is_not_a_string_is_refused_never_a_crash(
    upstream: WireProtocol, body: dict[str, Any]
) -> None:
    translator = translator_for(WireProtocol.RESPONSES, upstream)
    assert translator is not None
    with pytest.raises(TranslationRefused) as refused:
        translator.translate({"model": "m", **body})
    assert refused.value.param is not None and refused.value.param.startswith("tools")
