"""API fuzzing (issue #16, OPS-1): schemathesis against the gateway's own ``/openapi.json``.

Every management operation gets a few generated requests, as the admin and as a member, on a real
gateway over a real SQLite file: none may answer 5xx, and none may break its documented schema.
Bounded (a few examples per operation, no shrinking) so ``make test`` stays fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from sublane_gateway.testing import Gateway, make_settings, running_gateway

EXAMPLES_PER_OPERATION = 4
# Signing out would only end the fuzzing session; a changed password (the caller's own, or any
# user's reset by the admin) ends every session of that user and would lock the next run out.
SKIPPED = {
    ("POST", "/api/auth/logout"),
    ("POST", "/api/me/password"),
    ("POST", "/api/users/{user_id}/password"),
}


@pytest.fixture(scope="module")
def fuzzed_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data_dir: Path = tmp_path_factory.mktemp("fuzz") / "data"
    with running_gateway(make_settings(data_dir, login_failures_max=1000)) as gateway:
        yield gateway


@pytest.mark.parametrize("role", ["admin", "member"])
def test_ops_1_fuzzed_management_requests_never_get_a_5xx(fuzzed_gateway: Gateway, role: str) -> None:
    gateway = fuzzed_gateway
    admin = gateway.admin()
    if role == "admin":
        client = admin
    else:
        existing = admin.get("/api/users").json()["items"]
        if not any(user["username"] == "fuzz-member" for user in existing):
            gateway.add_member(admin, "fuzz-member")
        client = gateway.login("fuzz-member", "member-pass-1")
    schema = schemathesis.openapi.from_url(f"{gateway.url}/openapi.json")
    operations = [
        result.ok()
        for result in schema.get_all_operations()
        if result.ok().path.startswith("/api/")
        and (result.ok().method.upper(), result.ok().path) not in SKIPPED
    ]
    assert len(operations) >= 25
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def fuzz(case: schemathesis.Case) -> None:
            request = case.as_transport_kwargs(base_url=gateway.url)
            headers = {**dict(client.headers), **(request.get("headers") or {})}
            response = client.request(
                request["method"],
                request["url"],
                params=request.get("params"),
                headers={k: v for k, v in headers.items() if k.lower() != "content-length"},
                content=request.get("data") if isinstance(request.get("data"), bytes | str) else None,
                json=request.get("json"),
            )
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {request['url']} → {response.status_code}: {response.text[:200]}"
                )
            elif response.status_code < 300:
                _conforms(case, response, failures)

        fuzz()
    assert not failures, "\n".join(failures[:20])


def _conforms(case: schemathesis.Case, response: httpx.Response, failures: list[str]) -> None:
    try:
        case.operation.validate_response(response)
    except Exception as error:  # a schemathesis failure: the answer does not match its schema
        failures.append(f"{case.method} {case.path} answer breaks its schema: {str(error)[:200]}")
