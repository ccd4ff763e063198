"""PAID-1 ``openai-compatible`` with a server that refuses ``stream_options`` (Ollama, LM Studio,
TGI, LocalAI, vLLM before 0.4.3, Mistral's 422, Azure AI's "Extra parameters"): a real local HTTP
server answering 400/422 to that field. The gateway sends the call once more without it, remembers
the server, never counts the refusal against the account, and records the usage the server gives on
its finish chunk — or none."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
from gateway_pool import Pool, recorded

MODEL = "local-coder-7b"
TEXT = "Hello from an old server"
USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
#: How servers word the refusal (the gateway must recognise each).
REFUSALS: dict[str, tuple[int, dict[str, Any]]] = {
    "azure-400": (
        400,
        {
            "detail": "Extra parameters ['stream_options'] are not allowed when extra-parameters is not "
            "set or set to be 'error'. Set extra-parameters to 'pass-through' to pass to the model."
        },
    ),
    "mistral-422": (
        422,
        {
            "object": "error",
            "message": {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "stream_options", "include_usage"],
                        "msg": "Extra inputs are not permitted",
                        "input": True,
                    }
                ]
            },
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        },
    ),
}


class OldServer(ThreadingHTTPServer):
    """A Chat Completions server older than ``stream_options``: it refuses the field; its streams
    carry the usage on the finish chunk when ``usage_on_finish`` (as llama.cpp), else none."""

    daemon_threads = True

    def __init__(self, refusal: tuple[int, dict[str, Any]], *, usage_on_finish: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.refusal = refusal
        self.usage_on_finish = usage_on_finish
        self.bodies: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: OldServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.headers.get("authorization") != "Bearer old-server-key":
            self._json(401, {"error": {"message": "Unauthorized", "type": "invalid_request_error"}})
            return
        self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.bodies.append(body)
        if "stream_options" in body:
            self._json(*self.server.refusal)
            return
        if not body.get("stream"):
            message = {"role": "assistant", "content": TEXT}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._json(200, {"id": "chatcmpl-old", "object": "chat.completion", "model": MODEL,
                             "choices": [choice], "usage": USAGE})  # fmt: skip
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        base = {"id": "chatcmpl-old", "object": "chat.completion.chunk", "model": MODEL}
        chunks: list[dict[str, Any]] = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": TEXT}}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        if self.server.usage_on_finish:
            chunks[-1]["usage"] = USAGE
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@pytest.fixture
def old_server(request: pytest.FixtureRequest) -> Iterator[OldServer]:
    refusal, usage_on_finish = request.param
    server = OldServer(REFUSALS[refusal], usage_on_finish=usage_on_finish)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "old_server",
    [("azure-400", True), ("mistral-422", False)],
    ids=["400-usage-on-finish", "422-no-usage"],
    indirect=True,
)
def test_paid_1_compat_server_refusing_stream_options_is_asked_again_without_it(
    make_pool: Callable[..., Pool], old_server: OldServer
) -> None:
    pool = make_pool(accounts=0, failover_attempts=0)
    credentials = {"api_key": "old-server-key", "base_url": old_server.base_url}
    imported = pool.admin.post(
        "/api/accounts/import",
        json={"provider": "openai-compatible", "name": "old", "credentials": credentials, "group_ids": [1]},
    )
    assert imported.status_code == 201, imported.text
    account_id = imported.json()["id"]
    pool.settle()
    priced = pool.admin.put(f"/api/prices/{MODEL}", json={"input": 0.2, "output": 0.8})
    assert priced.status_code == 200, priced.text
    client = openai.OpenAI(api_key=pool.key, base_url=f"{pool.gateway.url}/v1", max_retries=0)
    with client:
        for _ in range(2):
            chunks = list(
                client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
                )
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert text == TEXT
        # a Responses client, translated through the hub, is served by the remembered form too
        with client.responses.stream(model=MODEL, input="hi") as stream:
            streamed = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
            final = stream.get_final_response()
        assert streamed == TEXT and final.status == "completed"
    asked = ["stream_options" in body for body in old_server.bodies]
    assert asked == [True, False, False, False]  # refused once, then remembered: no second refusal
    records = recorded(pool, 3)
    assert [record["outcome"] for record in records] == ["success"] * 3
    usage_on_finish = old_server.usage_on_finish
    for record in records:
        if usage_on_finish:
            assert (record["input_tokens"], record["output_tokens"]) == (11, 5)
        else:
            assert record["input_tokens"] is None and record["output_tokens"] is None
    runtime = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    (account,) = [account for account in runtime if account["id"] == account_id]
    assert account["state"] == "ready", account  # the refusal was no failure of the account
