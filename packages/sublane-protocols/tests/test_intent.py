"""``read_intent`` on what real clients send (``fixtures/real_client_requests.json``) — AFF-1, AFF-4.

Headers are looked up by lower-case name: the gateway passes Starlette's (case-insensitive)
headers, and these tests pass a dict with lower-cased keys, as the docstring of ``read_intent``
asks. Both are exercised.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest
from protocol_fixtures import real_client_requests
from starlette.datastructures import Headers

from sublane_core import SubLaneError, WireProtocol
from sublane_protocols import CallIntent, read_intent, require_model

CAPTURES = real_client_requests()
CODEX_HTTP = CAPTURES["codex_cli_0.171.0"][0]
CODEX_WS_UPGRADE = CAPTURES["codex_cli_0.171.0_websocket"][0]["upgrade"]
CODEX_WS_PREWARM = CAPTURES["codex_cli_0.171.0_websocket"][1]["client_message"]
CODEX_WS_TURN = CAPTURES["codex_cli_0.171.0_websocket"][2]["client_message"]
CLAUDE_CODE = CAPTURES["claude_code_2.1.197"][1]
GEMINI_CLI = CAPTURES["gemini_cli_0.61.0"]

CODEX_HTTP_SESSION = "01a2283c-fe10-78d1-9925-517e047c31b5"
CODEX_WS_SESSION = "01a2283d-8a20-7742-95ea-28dde325ea17"
CLAUDE_SESSION = "7c6c7643-f166-4fb5-8933-f9a2696e5690"


def lowered(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers as the gateway hands them over: looked up by lower-case name."""
    return {name.lower(): value for name, value in headers.items()}


def without(headers: Mapping[str, str], *names: str) -> dict[str, str]:
    drop = {name.lower() for name in names}
    return {name: value for name, value in lowered(headers).items() if name not in drop}


def gemini_path_model(path: str) -> str:
    """``/v1beta/models/{model}:{method}`` → ``{model}``, as the gateway's route reads it."""
    model, _, _method = path.removeprefix("/v1beta/models/").partition(":")
    return model


def codex_intent(headers: Mapping[str, str], body: Mapping[str, Any]) -> CallIntent:
    return read_intent(WireProtocol.RESPONSES, headers, body)


def claude_intent(headers: Mapping[str, str], body: Mapping[str, Any]) -> CallIntent:
    return read_intent(WireProtocol.MESSAGES, headers, body)


# --- the captured requests, as they came ---------------------------------------------------------


def test_captures_hold_the_requests_these_tests_read() -> None:
    assert CODEX_HTTP["method"] == "POST" and CODEX_HTTP["path"] == "/v1/responses"
    assert CODEX_WS_UPGRADE["path"] == "/v1/responses"
    assert CODEX_WS_PREWARM["type"] == CODEX_WS_TURN["type"] == "response.create"
    assert CODEX_WS_PREWARM["generate"] is False and "generate" not in CODEX_WS_TURN
    assert CLAUDE_CODE["method"] == "POST" and CLAUDE_CODE["path"] == "/v1/messages?beta=true"
    assert GEMINI_CLI["path"].endswith(":streamGenerateContent")


def test_aff_1_codex_cli_http_request_intent() -> None:
    intent = codex_intent(lowered(CODEX_HTTP["headers"]), CODEX_HTTP["body"])
    assert intent == CallIntent(
        model="gpt-5-codex", stream=True, conversation_key=CODEX_HTTP_SESSION, continuation=False
    )


@pytest.mark.parametrize("message", [CODEX_WS_PREWARM, CODEX_WS_TURN], ids=["prewarm", "turn"])
def test_aff_1_codex_cli_websocket_messages_take_the_key_from_the_upgrade(message: dict[str, Any]) -> None:
    intent = codex_intent(lowered(CODEX_WS_UPGRADE["headers"]), message)
    assert intent == CallIntent(
        model="gpt-5-codex", stream=True, conversation_key=CODEX_WS_SESSION, continuation=False
    )


def test_aff_1_claude_code_request_intent() -> None:
    intent = claude_intent(lowered(CLAUDE_CODE["headers"]), CLAUDE_CODE["body"])
    assert intent == CallIntent(
        model="claude-opus-4-8", stream=True, conversation_key=CLAUDE_SESSION, continuation=False
    )


def test_aff_2_gemini_cli_request_is_sessionless_with_the_model_from_the_route() -> None:
    # The Gemini CLI sends no per-session header; x-gemini-api-privileged-user-id is per installation.
    path_model = gemini_path_model(GEMINI_CLI["path"])
    assert path_model == "gemini-3.8-flash"
    intent = read_intent(
        WireProtocol.GEMINI, lowered(GEMINI_CLI["headers"]), GEMINI_CLI["body"], path_model=path_model
    )
    assert intent.model == "gemini-3.8-flash"
    assert intent.conversation_key is None
    assert intent.continuation is False


@pytest.mark.parametrize(
    ("capture", "protocol", "key"),
    [
        (CODEX_HTTP, WireProtocol.RESPONSES, CODEX_HTTP_SESSION),
        (CLAUDE_CODE, WireProtocol.MESSAGES, CLAUDE_SESSION),
    ],
    ids=["codex", "claude"],
)
def test_aff_1_starlette_headers_with_the_captured_spelling_give_the_same_key(
    capture: dict[str, Any], protocol: WireProtocol, key: str
) -> None:
    # What the gateway passes: Starlette's Headers, case-insensitive, built from the raw names.
    headers = Headers(headers=capture["headers"])
    assert read_intent(protocol, headers, capture["body"]).conversation_key == key


# --- AFF-1 for Codex / OpenAI clients ------------------------------------------------------------


def test_aff_1_codex_session_header_is_the_conversation_key() -> None:
    body = dict(CODEX_HTTP["body"], prompt_cache_key="another-cache-key")
    assert codex_intent(lowered(CODEX_HTTP["headers"]), body).conversation_key == CODEX_HTTP_SESSION


@pytest.mark.parametrize("name", ["session_id", "Session_id", "SESSION_ID", "session-id", "Session-Id"])
def test_aff_1_codex_session_header_is_found_case_insensitively(name: str) -> None:
    raw = {name: "conv-42", "content-type": "application/json"}
    body = {"model": "gpt-5-codex", "prompt_cache_key": "cache-key"}
    assert codex_intent(lowered(raw), body).conversation_key == "conv-42"
    assert codex_intent(Headers(headers=raw), body).conversation_key == "conv-42"


def test_aff_1_codex_prompt_cache_key_without_a_session_header() -> None:
    headers = without(CODEX_HTTP["headers"], "session-id")
    key = CODEX_HTTP["body"]["prompt_cache_key"]
    assert codex_intent(headers, CODEX_HTTP["body"]).conversation_key == key


def test_aff_1_an_empty_session_header_falls_back_to_prompt_cache_key() -> None:
    headers = dict(without(CODEX_HTTP["headers"], "session-id"), **{"session-id": ""})
    body = dict(CODEX_HTTP["body"], prompt_cache_key="cache-key")
    assert codex_intent(headers, body).conversation_key == "cache-key"


@pytest.mark.parametrize("prompt_cache_key", [None, "", 42, ["k"], {"k": "v"}])
def test_aff_2_no_session_header_and_no_usable_prompt_cache_key_is_sessionless(prompt_cache_key: Any) -> None:
    # thread-id, x-client-request-id and client_metadata.session_id are not conversation keys.
    headers = without(CODEX_HTTP["headers"], "session-id")
    body = dict(CODEX_HTTP["body"], prompt_cache_key=prompt_cache_key)
    assert "thread-id" in headers and body["client_metadata"]["session_id"] == CODEX_HTTP_SESSION
    assert codex_intent(headers, body).conversation_key is None


def test_aff_1_overlong_keys_are_cut_to_256_characters() -> None:
    long_key = "k" * 300
    assert codex_intent({"session_id": long_key}, {"model": "m"}).conversation_key == "k" * 256
    assert codex_intent({}, {"model": "m", "prompt_cache_key": long_key}).conversation_key == "k" * 256
    claude = claude_intent({"x-claude-code-session-id": long_key}, {"model": "m"})
    assert claude.conversation_key == "k" * 256


def test_chat_completions_reads_intent_like_responses() -> None:
    body = {"model": "gpt-5-codex", "messages": [], "prompt_cache_key": "chat-conv", "stream": True}
    intent = read_intent(WireProtocol.CHAT_COMPLETIONS, {"session-id": "chat-session"}, body)
    assert intent == CallIntent(
        model="gpt-5-codex", stream=True, conversation_key="chat-session", continuation=False
    )
    assert read_intent(WireProtocol.CHAT_COMPLETIONS, {}, body).conversation_key == "chat-conv"


# --- AFF-4: upstream continuation ------------------------------------------------------------------


def test_aff_4_previous_response_id_on_a_websocket_turn_is_a_continuation() -> None:
    follow_up = dict(CODEX_WS_TURN, previous_response_id="resp_0123456789abcdef")
    intent = codex_intent(lowered(CODEX_WS_UPGRADE["headers"]), follow_up)
    assert intent.continuation is True
    assert intent.conversation_key == CODEX_WS_SESSION


@pytest.mark.parametrize("previous", [None, ""])
def test_aff_4_no_previous_response_id_is_not_a_continuation(previous: str | None) -> None:
    body = dict(CODEX_WS_TURN, previous_response_id=previous)
    assert codex_intent(lowered(CODEX_WS_UPGRADE["headers"]), body).continuation is False


def test_aff_4_anthropic_calls_never_continue_upstream_state() -> None:
    body = dict(CLAUDE_CODE["body"], previous_response_id="resp_x")
    assert claude_intent(lowered(CLAUDE_CODE["headers"]), body).continuation is False


@pytest.mark.parametrize(
    ("value", "stream"), [(True, True), (False, False), (None, False), ("true", False), (1, False)]
)
def test_stream_is_only_a_json_true(value: Any, stream: bool) -> None:
    for protocol in (WireProtocol.RESPONSES, WireProtocol.CHAT_COMPLETIONS, WireProtocol.MESSAGES):
        assert read_intent(protocol, {}, {"model": "m", "stream": value}).stream is stream


# --- AFF-1 for Anthropic clients -------------------------------------------------------------------


def test_aff_1_claude_code_session_header_wins_over_metadata() -> None:
    body = copy.deepcopy(CLAUDE_CODE["body"])
    body["metadata"]["user_id"] = json.dumps({"device_id": "d", "account_uuid": "", "session_id": "other"})
    assert claude_intent(lowered(CLAUDE_CODE["headers"]), body).conversation_key == CLAUDE_SESSION


def test_aff_1_claude_metadata_user_id_json_session_without_the_header() -> None:
    headers = without(CLAUDE_CODE["headers"], "X-Claude-Code-Session-Id")
    assert claude_intent(headers, CLAUDE_CODE["body"]).conversation_key == CLAUDE_SESSION


def test_aff_1_claude_legacy_user_id_session_suffix() -> None:
    legacy = f"user_faa3833c435ef830_account_0b6c1b52-3b8a-4ac4-9d4c-28e1fce9a8a2_session_{CLAUDE_SESSION}"
    body = dict(CLAUDE_CODE["body"], metadata={"user_id": legacy})
    headers = without(CLAUDE_CODE["headers"], "X-Claude-Code-Session-Id")
    assert claude_intent(headers, body).conversation_key == CLAUDE_SESSION


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {},
        {"user_id": ""},
        {"user_id": 7},
        {"user_id": json.dumps({"device_id": "d", "account_uuid": ""})},
        {"user_id": json.dumps({"device_id": "d", "session_id": ""})},
        {"user_id": "user_faa3833c435ef830_account__session_"},
        {"user_id": "plain-user-id"},
        "not-an-object",
    ],
    ids=[
        "none",
        "empty",
        "empty-user-id",
        "number",
        "json-without-session",
        "json-empty-session",
        "legacy-empty-session",
        "plain",
        "string",
    ],
)
def test_aff_2_claude_without_a_session_is_sessionless(metadata: Any) -> None:
    body = dict(CLAUDE_CODE["body"], metadata=metadata)
    headers = without(CLAUDE_CODE["headers"], "X-Claude-Code-Session-Id")
    assert claude_intent(headers, body).conversation_key is None


def test_aff_1_claude_empty_session_header_falls_back_to_metadata() -> None:
    headers = dict(lowered(CLAUDE_CODE["headers"]), **{"x-claude-code-session-id": ""})
    assert claude_intent(headers, CLAUDE_CODE["body"]).conversation_key == CLAUDE_SESSION


# --- Gemini: the model is in the route -------------------------------------------------------------


@pytest.mark.parametrize(
    ("path_model", "model"),
    [
        ("gemini-3.8-flash", "gemini-3.8-flash"),
        ("models/gemini-3.8-flash", "gemini-3.8-flash"),
        (" gemini-3.8-flash ", "gemini-3.8-flash"),
        (" models/gemini-3.8-flash", "gemini-3.8-flash"),
    ],
)
def test_gemini_model_comes_from_the_route_without_models_prefix(path_model: str, model: str) -> None:
    intent = read_intent(WireProtocol.GEMINI, {}, GEMINI_CLI["body"], path_model=path_model)
    assert intent.model == model


def test_gemini_ignores_a_model_in_the_body() -> None:
    with pytest.raises(SubLaneError) as caught:
        read_intent(WireProtocol.GEMINI, {}, {"model": "gemini-3.8-flash"})
    assert caught.value.code == "invalid_request"


@pytest.mark.parametrize("path_model", ["models/", "models/   ", "  models/"])
def test_gemini_bare_models_prefix_is_not_a_model(path_model: str) -> None:
    # Validated after the prefix is removed: "models/" alone once gave CallIntent(model="").
    with pytest.raises(SubLaneError) as caught:
        read_intent(WireProtocol.GEMINI, {}, GEMINI_CLI["body"], path_model=path_model)
    assert caught.value.code == "invalid_request"


# --- a malformed model is refused with invalid_request -----------------------------------------------

BODY_MODEL_PROTOCOLS = [WireProtocol.RESPONSES, WireProtocol.CHAT_COMPLETIONS, WireProtocol.MESSAGES]
BAD_MODELS = [None, "", "   ", 42, 4.2, True, ["gpt-5"], {"id": "gpt-5"}, "x" * 257]
BAD_MODEL_IDS = [
    "none",
    "empty",
    "blank",
    "int",
    "float",
    "bool",
    "list",
    "object",
    "257-chars",
]


@pytest.mark.parametrize("protocol", BODY_MODEL_PROTOCOLS)
@pytest.mark.parametrize("model", BAD_MODELS, ids=BAD_MODEL_IDS)
def test_malformed_body_model_is_invalid_request(protocol: WireProtocol, model: Any) -> None:
    with pytest.raises(SubLaneError) as caught:
        read_intent(protocol, {}, {"model": model, "stream": True})
    assert caught.value.code == "invalid_request"
    assert caught.value.status == 400


@pytest.mark.parametrize("protocol", BODY_MODEL_PROTOCOLS)
def test_missing_body_model_is_invalid_request(protocol: WireProtocol) -> None:
    body = {key: value for key, value in CLAUDE_CODE["body"].items() if key != "model"}
    with pytest.raises(SubLaneError) as caught:
        read_intent(protocol, lowered(CLAUDE_CODE["headers"]), body)
    assert caught.value.code == "invalid_request"


@pytest.mark.parametrize("model", BAD_MODELS, ids=BAD_MODEL_IDS)
def test_malformed_route_model_is_invalid_request(model: Any) -> None:
    with pytest.raises(SubLaneError) as caught:
        read_intent(WireProtocol.GEMINI, {}, GEMINI_CLI["body"], path_model=model)
    assert caught.value.code == "invalid_request"


def test_model_of_256_characters_is_accepted_and_surrounding_blanks_are_dropped() -> None:
    assert require_model("m" * 256) == "m" * 256
    assert require_model("  gpt-5-codex\n") == "gpt-5-codex"
    assert codex_intent({}, {"model": " gpt-5-codex "}).model == "gpt-5-codex"
