"""ModelRoutes: model calls reach their endpoint past FastAPI's routing, with the app's own error
handling kept (issue #19)."""

from __future__ import annotations

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.testclient import TestClient

from sublane_core import SubLaneError
from sublane_gateway import routes
from sublane_gateway._errors import install_error_handlers
from sublane_gateway._model_routes import ModelRoutes

router = APIRouter()
served: list[str] = []


@router.post("/v1/things/{name}:do", response_model=None)
async def do_thing(request: Request, name: str) -> Response:
    served.append(f"direct {name} {request.path_params['name']}")
    if name == "refused":
        raise SubLaneError("model_not_found", "No such model.")
    if name == "broken":
        raise RuntimeError("a bug")
    return JSONResponse({"name": name, "body": await request.json()})


@router.get("/v1/things/{name}:do", response_model=None)
async def look_at_thing(name: str) -> Response:
    return JSONResponse({"looked": name})


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    posts = [route for route in router.routes if isinstance(route, APIRoute) and route.methods == {"POST"}]
    app.add_middleware(ModelRoutes, routes=posts)
    served.clear()
    return TestClient(app, raise_server_exceptions=False)


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


def test_the_gateway_serves_every_model_post_this_way() -> None:
    paths = {route.path for route in routes.MODEL_CALL_ROUTES}
    assert {
        "/v1/responses",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1beta/models/{model}:generateContent",
    } <= paths
    assert all(route.methods == {"POST"} for route in routes.MODEL_CALL_ROUTES)
