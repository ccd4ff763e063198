"""A real OpenID Connect provider process for the SSO tests (AUTH-2): ``oidc-provider-mock`` from PyPI,
started on a free loopback port with nonces required, as any OpenID provider a team runs would be
reached: discovery, an authorization page, a token endpoint and a JWKS. Its users' claims are set
through its ``PUT /users/{sub}``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from ports import free_port as _free_port

START_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class OidcProviderProcess:
    issuer: str

    def set_user(self, sub: str, **claims: Any) -> None:
        answer = httpx.put(f"{self.issuer}/users/{sub}", json=claims, timeout=10)
        assert answer.status_code == 204, answer.text


@contextmanager
def oidc_provider(*extra: str) -> Iterator[OidcProviderProcess]:
    """The provider, stopped on exit; ``extra``: its command-line options (``--token-max-age 1``)."""
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "oidc_provider_mock",
        "--port",
        str(port),
        "--require-nonce",
        "true",
        *extra,
    ]
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115  (closed below, after the process)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, text=True)
    issuer = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the OpenID provider did not start: {process.stderr.read() if process.stderr else ''}"
                )
            time.sleep(0.1)
        yield OidcProviderProcess(issuer)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
