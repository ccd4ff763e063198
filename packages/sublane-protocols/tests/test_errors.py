"""``render_error``: every client protocol's error shape, golden, and read back by its official SDK.

The bodies and headers for a set of statuses are compared with ``fixtures/golden/errors.json``
(``SUBLANE_UPDATE_GOLDENS=1`` rewrites it). Each answer is then served through an ``httpx2``
``MockTransport`` to the protocol's own SDK (``openai``, ``anthropic``; ``google-genai`` when
installed), which must raise its exception class for the status and expose SubLane's code, the
message and the request ID where that SDK reads them.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from anthropic.types import ErrorResponse
from protocol_fixtures import check_golden

from sublane_core import SubLaneError, WireProtocol
from sublane_protocols import ErrorAnswer, error_headers, render_error, request_id_headers

REQUEST_ID = "req_01K9Z3QW8N4T7V2X5B6C8D0F1G"
STATUSES = (400, 401, 403, 404, 413, 429, 500, 502, 503, 529)
PROTOCOLS = tuple(WireProtocol)

#: status → (SubLane code, message, retry_after, param). Catalogue codes with their catalogue
#: messages, except 529, which SubLane only relays (an upstream's overload).
CASES: dict[int, tuple[str, str, float | None, str | None]] = {
    400: ("invalid_request", "'model' must be a non-empty string.", None, "model"),
    401: ("invalid_api_key", SubLaneError("invalid_api_key").message, None, None),
    403: ("quota_exhausted", SubLaneError("quota_exhausted").message, 1800.0, None),
    404: ("model_not_found", SubLaneError("model_not_found").message, None, None),
    413: ("body_too_large", SubLaneError("body_too_large").message, None, None),
    429: ("account_cooling", SubLaneError("account_cooling").message, 12.4, None),
    500: ("internal_error", SubLaneError("internal_error").message, None, None),
    502: ("upstream_error", SubLaneError("upstream_error").message, None, None),
    503: ("no_account_available", SubLaneError("no_account_available").message, 0.3, None),
    529: ("upstream_error", "The provider is overloaded; try again shortly.", 2.0, None),
}

OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
OPENAI_TYPES |= {404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error"}
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
ANTHROPIC_TYPES |= {404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error"}
ANTHROPIC_TYPES |= {529: "overloaded_error"}

OPENAI_EXCEPTIONS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    413: openai.APIStatusError,  # the SDK has no class of its own for 413
    429: openai.RateLimitError,
    500: openai.InternalServerError,
    502: openai.InternalServerError,
    503: openai.InternalServerError,
    529: openai.InternalServerError,
}
ANTHROPIC_EXCEPTIONS: dict[int, type[anthropic.APIStatusError]] = {
    400: anthropic.BadRequestError,
    401: anthropic.AuthenticationError,
    403: anthropic.PermissionDeniedError,
    404: anthropic.NotFoundError,
    413: anthropic.ContentTooLargeError,
    429: anthropic.RateLimitError,
    500: anthropic.InternalServerError,
    502: anthropic.InternalServerError,
    503: anthropic.ServiceUnavailableError,
    529: anthropic.OverloadedError,
}

#: google.rpc.Code names: what ``error.status`` of Google's envelope may hold.
GOOGLE_RPC_CODES = frozenset(
    {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
        "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
        "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
    }
)  # fmt: skip


def render(protocol: WireProtocol, status: int) -> ErrorAnswer:
    code, message, retry_after, param = CASES[status]
    return render_error(
        protocol, status, code, message, request_id=REQUEST_ID, retry_after=retry_after, param=param
    )


def http_response_of(answer: ErrorAnswer) -> httpx2.Response:
    headers = dict(answer.headers, **{"content-type": "application/json"})
    return httpx2.Response(answer.status, headers=headers, content=answer.content())


def mock_http_client(answer: ErrorAnswer) -> httpx2.Client:
    return httpx2.Client(transport=httpx2.MockTransport(lambda request: http_response_of(answer)))


# --- golden bodies and headers ---------------------------------------------------------------------


def test_error_answers_match_golden() -> None:
    actual = {
        protocol.value: {
            str(status): {"status": answer.status, "headers": answer.headers, "body": answer.body}
            for status in STATUSES
            for answer in [render(protocol, status)]
        }
        for protocol in PROTOCOLS
    }
    check_golden("errors.json", actual)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("status", STATUSES)
def test_error_answer_keeps_the_status_and_the_code(protocol: WireProtocol, status: int) -> None:
    answer = render(protocol, status)
    code, message, _, _ = CASES[status]
    assert answer.status == status
    text = json.dumps(answer.body)
    assert code in text and message in text
    assert json.loads(answer.content()) == answer.body


@pytest.mark.parametrize("status", STATUSES)
def test_openai_shape(status: int) -> None:
    for protocol in (WireProtocol.RESPONSES, WireProtocol.CHAT_COMPLETIONS):
        code, message, _, param = CASES[status]
        expected_type = OPENAI_TYPES.get(status, "server_error")
        body = {"error": {"message": message, "type": expected_type, "param": param, "code": code}}
        assert render(protocol, status).body == body


@pytest.mark.parametrize("status", STATUSES)
def test_anthropic_shape(status: int) -> None:
    code, message, _, _ = CASES[status]
    expected_type = ANTHROPIC_TYPES.get(status, "api_error")
    assert render(WireProtocol.MESSAGES, status).body == {
        "type": "error",
        "error": {"type": expected_type, "message": message, "code": code},
        "request_id": REQUEST_ID,
    }


@pytest.mark.parametrize("status", STATUSES)
def test_gem_2_google_envelope(status: int) -> None:
    code, message, _, param = CASES[status]
    error = render(WireProtocol.GEMINI, status).body["error"]
    assert set(error) == {"code", "message", "status", "details"}
    assert error["code"] == status
    assert error["status"] in GOOGLE_RPC_CODES
    assert error["message"] == f"{message} ({code})"  # GEM-2: the SPEC code in the message …
    info = error["details"][0]  # … and in error.details
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["reason"] == code and info["domain"] == "sublane"
    metadata = {"request_id": REQUEST_ID} | ({"field": param} if param else {})
    assert info["metadata"] == metadata


def test_gem_2_google_status_names_follow_the_http_status() -> None:
    names = {status: render(WireProtocol.GEMINI, status).body["error"]["status"] for status in STATUSES}
    assert names == {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        413: "INVALID_ARGUMENT",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        502: "INTERNAL",
        503: "UNAVAILABLE",
        529: "INTERNAL",
    }


def test_without_request_id_no_id_anywhere() -> None:
    for protocol in PROTOCOLS:
        answer = render_error(protocol, 404, "model_not_found", "No such model.")
        assert answer.headers == {}
        assert "request_id" not in json.dumps(answer.body)


def test_content_is_compact_utf8_json() -> None:
    answer = render_error(WireProtocol.MESSAGES, 400, "invalid_request", "Modèle inconnu : « x ».")
    assert (
        answer.content()
        == (
            '{"type":"error","error":{"type":"invalid_request_error",'
            '"message":"Modèle inconnu : « x ».","code":"invalid_request"}}'
        ).encode()
    )


# --- headers: X-Request-ID, Anthropic's request-id, Retry-After --------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_request_id_headers(protocol: WireProtocol) -> None:
    headers = render(protocol, 500).headers
    expected = {"x-request-id": REQUEST_ID}
    if protocol is WireProtocol.MESSAGES:
        expected["request-id"] = REQUEST_ID  # the header the anthropic SDK reads
    assert headers == expected


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_request_id_headers_are_those_of_the_error_answers(protocol: WireProtocol) -> None:
    # What a successful answer carries too (a stream's headers): the same as an error's.
    assert request_id_headers(protocol, REQUEST_ID) == render(protocol, 500).headers


@pytest.mark.parametrize(
    ("retry_after", "header"),
    [(0.0, "1"), (0.3, "1"), (0.5, "1"), (1.0, "1"), (1.4, "1"), (1.6, "2"), (12.4, "12"), (3600.0, "3600")],
)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_retry_after_is_whole_seconds_and_at_least_one(
    protocol: WireProtocol, retry_after: float, header: str
) -> None:
    answer = render_error(protocol, 429, "account_cooling", "Cooling.", retry_after=retry_after)
    assert answer.headers == {"retry-after": header}


def test_no_retry_after_header_without_a_delay() -> None:
    assert error_headers(REQUEST_ID, None) == {"x-request-id": REQUEST_ID}
    assert error_headers(None, None) == {}
    assert error_headers("", 3.0) == {"retry-after": "3"}


# --- the official SDKs read the answers ------------------------------------------------------------


def call_openai(client: openai.OpenAI, protocol: WireProtocol) -> None:
    if protocol is WireProtocol.RESPONSES:
        client.responses.create(model="gpt-5-codex", input="hi")
    else:
        client.chat.completions.create(model="gpt-5-codex", messages=[{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("protocol", [WireProtocol.RESPONSES, WireProtocol.CHAT_COMPLETIONS])
def test_openai_sdk_raises_its_class_with_code_and_request_id(protocol: WireProtocol, status: int) -> None:
    answer = render(protocol, status)
    code, message, _, param = CASES[status]
    client = openai.OpenAI(
        api_key="sl_test",
        base_url="http://sublane.test/v1",
        http_client=mock_http_client(answer),
        max_retries=0,
    )
    with client, pytest.raises(openai.APIStatusError) as caught:
        call_openai(client, protocol)
    error = caught.value
    assert type(error) is OPENAI_EXCEPTIONS[status]
    assert error.status_code == status
    assert error.code == code
    assert error.type == answer.body["error"]["type"]
    assert error.param == param
    assert error.message == f"Error code: {status} - {message}"
    assert error.request_id == REQUEST_ID
    assert error.body == answer.body["error"]


@pytest.mark.parametrize("status", STATUSES)
def test_anthropic_sdk_raises_its_class_with_type_message_and_request_id(status: int) -> None:
    answer = render(WireProtocol.MESSAGES, status)
    code, message, _, _ = CASES[status]
    client = anthropic.Anthropic(
        api_key="sl_test", base_url="http://sublane.test", http_client=mock_http_client(answer), max_retries=0
    )
    with client, pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(
            model="claude-opus-4-8", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    error = caught.value
    assert type(error) is ANTHROPIC_EXCEPTIONS[status]
    assert error.status_code == status
    assert error.type == answer.body["error"]["type"]
    assert error.api_message == message
    assert error.request_id == REQUEST_ID  # from the request-id header
    assert isinstance(error.body, dict) and error.body["error"]["code"] == code


@pytest.mark.parametrize("status", [s for s in STATUSES if s != 413])
def test_anthropic_sdk_error_response_model_accepts_the_body(status: int) -> None:
    # 413's "request_too_large" is an Anthropic API error type that anthropic 2.x's ErrorResponse
    # union does not list, so only the exception class (above) can be checked for it.
    answer = render(WireProtocol.MESSAGES, status)
    parsed = ErrorResponse.model_validate(answer.body)
    assert parsed.type == "error"
    assert parsed.error.type == answer.body["error"]["type"]
    assert parsed.error.message == CASES[status][1]
    assert parsed.request_id == REQUEST_ID


@pytest.mark.parametrize("status", STATUSES)
def test_gem_2_google_genai_sdk_reads_status_and_message(status: int) -> None:
    genai_errors: Any = pytest.importorskip(
        "google.genai.errors",
        reason="google-genai is not installed in .venv: the Google envelope is checked by shape only "
        "(test_gem_2_google_envelope)",
    )
    answer = render(WireProtocol.GEMINI, status)
    response = httpx.Response(
        status,
        json=answer.body,
        headers=answer.headers,
        request=httpx.Request("POST", "http://sublane.test/v1beta/models/gemini-3.8-flash:generateContent"),
    )
    with pytest.raises(genai_errors.APIError) as caught:
        genai_errors.APIError.raise_for_response(response)
    error = caught.value
    expected_class = genai_errors.ClientError if status < 500 else genai_errors.ServerError
    assert isinstance(error, expected_class)
    assert error.code == status
    assert error.status == answer.body["error"]["status"]
    assert error.message == answer.body["error"]["message"]
