"""CLIENT-1/3 for Antigravity: its client's identity and the assumed version refusal."""

from __future__ import annotations

import json

from sublane_provider_antigravity._failures import classify_failure
from sublane_provider_antigravity._identity import AntigravityIdentity
from sublane_providers import FailureKind


def test_client_1_antigravity_calls_carry_its_clients_identity() -> None:
    identity = AntigravityIdentity()
    gemini_cli = {"user-agent": "GeminiCLI/0.61.0 (linux; x64)"}
    assert identity.client_version(gemini_cli) is None
    assert identity.carried(gemini_cli)["user-agent"] == "antigravity/1.13.3 linux/amd64"
    identity.use("1.20.0")
    assert identity.carried({})["user-agent"] == "antigravity/1.20.0 linux/amd64"
    own = {"user-agent": "antigravity/1.21.0 darwin/arm64", "client-metadata": "{}"}
    assert identity.carried(own) == own


def test_client_3_antigravity_version_refusal_is_detected() -> None:
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "CLIENT_VERSION_TOO_OLD"}
    body = {"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "Old.", "details": [info]}}
    failure = classify_failure(400, {}, json.dumps(body).encode(), 0.0)
    assert failure.kind is FailureKind.CLIENT_VERSION
    plain = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "Bad field."}}
    assert classify_failure(400, {}, json.dumps(plain).encode(), 0.0).kind is FailureKind.CLIENT_ERROR
