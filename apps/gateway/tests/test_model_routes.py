"""ModelRoutes: model calls reach their endpoint past FastAPI and its middleware (ModelRoutes is the
outermost app), with the app's own error handling kept (issue #19)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.testclient import TestClient

from sublane_core import SubLaneError
from sublane_gateway import routes
from sublane_gateway._errors import install_error_handlers
from sublane_gateway._model_routes import ModelRoutes
from sublane_gateway.pipeline import StreamReply
from sublane_gateway.routes._replies import to_response

router = APIRouter()
served: list[str] = []


@router.post("/v1/things/{name}:do", response_model=None)
async def do_thing(request: Request, name: str) -> Response:
    served.append(f"direct {name} {request.path_params['name']}")
    if name == "refused":
        raise SubLaneError("model_not_found", "No such model.")
    if name == "broken":
        raise RuntimeError("a bug")
    if name == "cut":
        return StreamingResponse(_cut_stream(), media_type="text/event-stream")
    if name == "cut-reply":  # the gateway's own stream response (routes/_replies.py)
        return to_response(StreamReply(_cut_stream()))
    return JSONResponse({"name": name, "body": await request.json()})


async def _cut_stream() -> AsyncIterator[bytes]:
    yield b"data: 1\n\n"
    raise RuntimeError("a bug mid-stream")


@router.get("/v1/things/{name}:do", response_model=None)
async def look_at_thing(name: str) -> Response:
    return JSONResponse({"looked": name})


def _served(raise_server_exceptions: bool = False) -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    app.state.marker = "the app's state"
    posts = [route for route in router.routes if isinstance(route, APIRoute) and route.methods == {"POST"}]
    served.clear()
    return TestClient(ModelRoutes(app, posts), raise_server_exceptions=raise_server_exceptions)


@pytest.fixture
def client() -> TestClient:
    return _served()


def test_a_model_post_reaches_its_endpoint_with_its_path_parameters(client: TestClient) -> None:
    answer = client.post("/v1/things/gemini-3:do", json={"x": 1})
    assert answer.status_code == 200 and answer.json() == {"name": "gemini-3", "body": {"x": 1}}
    assert served == ["direct gemini-3 gemini-3"]


def test_other_methods_and_paths_go_through_fastapi(client: TestClient) -> None:
    assert client.get("/v1/things/a:do").json() == {"looked": "a"}
    assert client.post("/v1/unknown", json={}).status_code == 404
    assert served == []


def test_errors_get_the_apps_own_handlers(client: TestClient) -> None:
    refused = client.post("/v1/things/refused:do", json={})
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found"
    broken = client.post("/v1/things/broken:do", json={})
    assert broken.status_code == 500 and broken.json()["error"]["code"] == "internal_error"
    assert broken.json()["error"]["type"] == "server_error"  # the client API's (OpenAI) shape


def test_a_bug_is_logged_and_raised_on_to_the_server_as_behind_starlettes_error_middleware(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, "sublane.gateway"), pytest.raises(RuntimeError, match="a bug"):
        _served(raise_server_exceptions=True).post("/v1/things/broken:do", json={})
    assert [record.getMessage() for record in caplog.records] == ["unhandled error: RuntimeError"]


@pytest.mark.parametrize("route", ["cut", "cut-reply"])
def test_a_bug_after_the_answer_started_ends_it_without_a_second_answer(
    caplog: pytest.LogCaptureFixture, route: str
) -> None:
    with caplog.at_level(logging.ERROR, "sublane.gateway"):
        cut = _served().post(f"/v1/things/{route}:do", json={})
    assert cut.status_code == 200 and cut.content == b"data: 1\n\n"
    assert [record.getMessage() for record in caplog.records] == ["unhandled error: RuntimeError"]


def test_model_endpoints_see_the_app_as_starlette_would_show_it() -> None:
    seen: list[str] = []

    async def endpoint(request: Request) -> Response:
        seen.append(request.app.state.marker)
        return JSONResponse({})

    app = FastAPI()
    app.state.marker = "the app's state"
    app.add_api_route("/v1/look", endpoint, methods=["POST"])
    posts = [route for route in app.routes if isinstance(route, APIRoute) and route.path == "/v1/look"]
    with TestClient(ModelRoutes(app, posts)) as client:  # the lifespan goes to the app
        assert client.post("/v1/look", json={}).status_code == 200
    assert seen == ["the app's state"]


def test_the_gateway_serves_every_model_post_this_way() -> None:
    paths = {route.path for route in routes.MODEL_CALL_ROUTES}
    assert {
        "/v1/responses",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1beta/models/{model:path}:generateContent",
    } <= paths
    assert all(route.methods == {"POST"} for route in routes.MODEL_CALL_ROUTES)


@pytest.mark.parametrize("route", ["cut", "cut-reply"])
async def test_after_the_answer_started_no_second_status_line_is_sent(route: str) -> None:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    posts = [r for r in router.routes if isinstance(r, APIRoute) and r.methods == {"POST"}]
    sent: list[dict[str, object]] = []
    body = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive() -> dict[str, object]:
        return body.pop() if body else {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/v1/things/{route}:do",
        "raw_path": f"/v1/things/{route}:do".encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "asgi": {"spec_version": "2.3"},
    }
    with pytest.raises(RuntimeError, match="mid-stream"):
        await ModelRoutes(app, posts)(scope, receive, send)  # type: ignore[arg-type]
    assert [m["type"] for m in sent].count("http.response.start") == 1
