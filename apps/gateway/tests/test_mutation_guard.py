from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sublane_gateway.testing import Gateway, make_settings, running_gateway

NEW_GROUP = '{"name": "team"}'


def _groups(admin: httpx.Client) -> list[str]:
    return [group["name"] for group in admin.get("/api/groups").json()["items"]]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example", "Content-Type": "application/json"},
        {"Origin": "null", "Content-Type": "application/json"},
        {"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"},
    ],
)
def test_cross_origin_mutations_are_refused(admin: httpx.Client, headers: dict[str, str]) -> None:
    response = admin.post("/api/groups", content=NEW_GROUP, headers=headers)
    assert response.status_code == 403
    assert response.json() == {
        "error": {"code": "cross_origin", "message": "Cross-origin requests may not change anything."}
    }
    assert _groups(admin) == ["default"]


def test_same_origin_mutations_pass(gateway: Gateway, admin: httpx.Client) -> None:
    response = admin.post(
        "/api/groups", content=NEW_GROUP, headers={"Origin": gateway.url, "Content-Type": "application/json"}
    )
    assert response.status_code == 201


def test_configured_origins_pass(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", allowed_origins=["https://sublane.example.com"])
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        response = admin.post(
            "/api/groups",
            content=NEW_GROUP,
            headers={"Origin": "https://sublane.example.com", "Content-Type": "application/json"},
        )
        assert response.status_code == 201


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]
)
def test_form_content_types_cannot_mutate(admin: httpx.Client, content_type: str) -> None:
    response = admin.post("/api/groups", content=NEW_GROUP, headers={"Content-Type": content_type})
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert _groups(admin) == ["default"]


def test_a_body_without_content_type_is_refused(admin: httpx.Client) -> None:
    request = admin.build_request("POST", "/api/groups", content=NEW_GROUP)
    assert "content-type" not in request.headers
    response = admin.send(request)
    assert response.status_code == 415
    assert _groups(admin) == ["default"]


def test_json_with_charset_is_json(admin: httpx.Client) -> None:
    response = admin.post(
        "/api/groups", content=NEW_GROUP, headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 201


def test_bodiless_mutations_need_no_content_type(admin: httpx.Client) -> None:
    assert admin.post("/api/auth/logout").status_code == 204


def test_oversized_bodies_are_refused(admin: httpx.Client) -> None:
    body = '{"name": "' + "x" * (1 << 20) + '"}'
    response = admin.post("/api/groups", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"


@pytest.mark.parametrize("body", ["{bad json", "", "[1, 2", '"just a string"', "null"])
def test_malformed_json_gets_400(admin: httpx.Client, body: str) -> None:
    response = admin.post("/api/groups", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] in {"invalid_json", "invalid_request"}
    assert _groups(admin) == ["default"]


def test_unknown_routes_and_methods_answer_in_the_error_shape(admin: httpx.Client) -> None:
    missing = admin.get("/api/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    wrong_method = admin.put("/api/me", json={})
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"


def test_openapi_docs_are_served(gateway: Gateway) -> None:
    client = gateway.client()
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/auth/login", "/api/users", "/api/groups/{group_id}/members", "/api/accounts/import"):
        assert path in paths
