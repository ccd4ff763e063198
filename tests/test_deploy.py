"""The container image (``Dockerfile``) and the deployment guide (``docs/deploy.md``).

The image is built and started only where a container runtime answers (``docker info``); on a
machine without one (this repository's development machines and CI have the docker client but no
daemon) that test is skipped and says so. The other tests read the files, so the image cannot
drift from the workspace unnoticed: every package the gateway depends on is copied and installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import tomllib
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()
DEPLOY = (ROOT / "docs" / "deploy.md").read_text()


def _instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of the Dockerfile, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    rows = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            rows.append((keyword.upper(), rest.strip()))
    return rows


def _gateway_dependencies() -> set[str]:
    """The workspace folders of the gateway and of every sublane-* package it needs, transitively."""
    folders = {
        tomllib.loads(path.read_text())["project"]["name"]: path.parent
        for path in [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("packages/*/*/pyproject.toml")]
    }
    wanted, todo = {"apps/gateway"}, [ROOT / "apps" / "gateway"]
    while todo:
        project = tomllib.loads((todo.pop() / "pyproject.toml").read_text())["project"]
        for requirement in project.get("dependencies", []):
            name = re.match(r"sublane-[a-z-]+[a-z]", requirement)
            if name and (folder := folders[name.group(0)]) and str(folder.relative_to(ROOT)) not in wanted:
                wanted.add(str(folder.relative_to(ROOT)))
                todo.append(folder)
    return wanted


def test_dockerfile_runs_sublane_serve_as_a_non_root_user_on_a_data_volume() -> None:
    rows = _instructions()
    first = rows[0]
    assert first[0] == "FROM" and re.fullmatch(r"python:3\.1[1-9]-slim", first[1])
    users = [rest for keyword, rest in rows if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert ("VOLUME", '["/data"]') in rows
    env = " ".join(rest for keyword, rest in rows if keyword == "ENV")
    assert "SUBLANE_DATA_DIR=/data" in env
    assert ("ENTRYPOINT", '["sublane"]') in rows and ("CMD", '["serve", "--host", "0.0.0.0"]') in rows
    assert any(keyword == "HEALTHCHECK" and "/healthz" in rest for keyword, rest in rows)
    assert "chmod 0700 /data" in DOCKERFILE


def test_dockerfile_installs_every_package_the_gateway_needs_and_not_the_simulator() -> None:
    copied = {rest.split()[0] for keyword, rest in _instructions() if keyword == "COPY"} - {"constraints.txt"}
    wanted = _gateway_dependencies()
    assert {"packages/sublane-providers/codex", "packages/sublane-core"} <= wanted
    # every folder it needs is copied (a provider distribution inside its family's folder), nothing else
    assert all(any(f"{folder}/".startswith(f"{source}/") for source in copied) for folder in wanted), wanted
    assert copied <= wanted
    install = next(rest for keyword, rest in _instructions() if keyword == "RUN" and "pip install" in rest)
    assert "-c constraints.txt" in install
    assert {f"./{folder}" for folder in wanted} <= set(install.split())
    assert "sublane-sim" not in DOCKERFILE


def test_deploy_guide_covers_tls_proxies_websockets_and_underscored_headers() -> None:
    for needle in (
        "underscores_in_headers on",
        "proxy_set_header Upgrade $http_upgrade",
        "SUBLANE_TRUSTED_PROXIES",
        "SUBLANE_ALLOWED_ORIGINS",
        "proxy_buffering off",
        "/readyz",
        "SUBLANE_METRICS_TOKEN",
        "sublane backup",
        "ssl_certificate",
    ):
        assert needle in DEPLOY, needle


def _docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return (
            subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slow
@pytest.mark.skipif(
    not _docker_works(),
    reason="no container runtime answers here (`docker info` fails): the image is not built",
)
def test_the_image_builds_starts_and_serves_its_health_and_sign_in(tmp_path: Path) -> None:
    tag = f"sublane-test:{uuid.uuid4().hex[:8]}"
    name = f"sublane-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "build", "-t", tag, str(ROOT)], check=True, timeout=1200)
    try:
        subprocess.run(
            ["docker", "run", "-d", "--name", name, "-p", "127.0.0.1::8080",
             "-e", "SUBLANE_ADMIN_USERNAME=admin", "-e", "SUBLANE_ADMIN_PASSWORD=admin-pass-1", tag],
            check=True, timeout=60,
        )  # fmt: skip
        port = (
            subprocess.run(
                ["docker", "port", name, "8080/tcp"], check=True, capture_output=True, text=True, timeout=30
            )
            .stdout.split(":")[-1]
            .strip()
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the container did not become ready"
            time.sleep(0.5)
        assert httpx.get(f"{url}/healthz", timeout=5).json() == {"status": "ok"}
        login = httpx.post(
            f"{url}/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}, timeout=5
        )
        assert login.status_code == 200
        whoami = subprocess.run(
            ["docker", "exec", name, "id", "-u"], check=True, capture_output=True, text=True, timeout=30
        )
        assert whoami.stdout.strip() != "0"
        backup = subprocess.run(
            ["docker", "exec", name, "sublane", "backup", "/data/backups/now"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert backup.returncode == 0, backup.stderr
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60, check=False)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60, check=False)
