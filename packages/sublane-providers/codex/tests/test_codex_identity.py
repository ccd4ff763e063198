"""CLIENT-1/3 for Codex: the Codex CLI's identity and the backend's version refusal."""

from __future__ import annotations

from sublane_provider_codex._failures import classify_failure
from sublane_provider_codex._identity import CodexIdentity
from sublane_providers import FailureKind

CLI = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)"


def test_client_1_codex_identity_reads_the_cli_version() -> None:
    identity = CodexIdentity()
    assert identity.client_version({"user-agent": CLI, "originator": "codex_exec"}) == "0.171.0"
    assert identity.client_version({"user-agent": CLI, "version": "0.171.0"}) == "0.171.0"
    assert identity.client_version({"user-agent": CLI, "originator": "codex_cli_rs"}) is None  # mixed
    assert identity.client_version({"user-agent": CLI, "version": "0.180.0"}) is None  # mixed
    assert identity.client_version({"user-agent": "claude-cli/2.1.332 (external, cli)"}) is None
    assert identity.client_version({"user-agent": "OpenAI/Python 1.99.0"}) is None
    assert identity.client_version({}) is None
    own = identity.headers("0.172.0")
    assert own["originator"] == "codex_cli_rs" and own["version"] == "0.172.0"
    assert own["user-agent"].startswith("codex_cli_rs/0.172.0 (")
    assert identity.client_version(own) == "0.172.0"  # SubLane's own identity is a usable one


def test_client_3_codex_version_refusal_is_detected() -> None:
    message = (
        b'{"detail": "The \'gpt-5.5\' model requires a newer version of Codex. '
        b'Please upgrade to the latest app or CLI and try again."}'
    )
    failure = classify_failure(400, {}, message, 0.0)
    assert failure.kind is FailureKind.CLIENT_VERSION and failure.code == "client_version_too_old"
    assert failure.needed_version is None
    other = classify_failure(400, {}, b'{"detail": "Unsupported parameter: temperature"}', 0.0)
    assert other.kind is FailureKind.CLIENT_ERROR
