"""SCALE-6: ``deploy/compose.yaml`` — PostgreSQL, Redis, a one-shot migration, two replicas and nginx
on one port.

Where a container runtime answers, ``docker compose up`` runs the file as written. Everywhere (this
repository's machines and CI have no daemon) the same topology is started from the file's own
contents with the same programs outside containers: Debian's PostgreSQL and Redis, the ``migrate``
service's command and each replica's command with the environment the file gives it (the service
names resolved to loopback ports), and Debian's nginx with ``deploy/nginx.conf``. Model calls go
through the one port, to both replicas, and keep being served while one replica is down.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from ports import free_port
from postgres_server import PostgresServer, running_postgres
from redis_server import REDIS_SERVER, RedisServer, running_redis
from replicas import Replica, wait_ready
from test_cli import SUBLANE
from test_real_clients import ANSWER, GEMINI_MODELS, _client, _run_cli, codex_exec, gemini_run

from sublane_sim import Behaviour, Simulator

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
NGINX_CONF = (ROOT / "deploy" / "nginx.conf").read_text()
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
#: nginx's fixed address on the compose file's ``edge`` network: the one proxy the replicas trust.
NGINX_ADDRESS = COMPOSE["services"]["nginx"]["networks"]["edge"]["ipv4_address"]
BODY = {"model": "gpt-5-codex", "input": "hi"}

pytestmark = pytest.mark.xdist_group("compose")


def _interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}``."""

    def one(match: re.Match[str]) -> str:
        name, operator, rest = match.group(1), match.group(2), match.group(3)
        if name in variables and variables[name] != "":
            return variables[name]
        if operator == ":-":
            return rest or ""
        raise AssertionError(f"compose.yaml needs {name}: {rest}")

    return re.sub(r"\$\{([A-Z_]+)(?:(:-|:\?)([^}]*))?\}", one, value)


def test_scale_6_compose_describes_postgresql_redis_a_migration_and_two_replicas_behind_one_port() -> None:
    services = COMPOSE["services"]
    assert {"postgres", "redis", "migrate", "sublane-1", "sublane-2", "nginx"} <= set(services)
    replicas = [services["sublane-1"], services["sublane-2"]]
    for replica in replicas:
        environment = replica["environment"]
        assert environment["SUBLANE_DATABASE_URL"].startswith("postgresql://")
        assert environment["SUBLANE_REDIS_URL"].startswith("redis://redis:")
        assert "SUBLANE_CREDENTIALS_KEY" in environment  # the same key on every replica (SCALE-1)
        assert replica["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "ports" not in replica  # reached through nginx only
    assert services["migrate"]["command"] == ["migrate"]
    assert services["nginx"]["ports"] == ["127.0.0.1:8080:8080"]  # the one port
    assert "underscores_in_headers on" in NGINX_CONF and "proxy_buffering off" in NGINX_CONF
    assert re.findall(r"server (sublane-\d):8080", NGINX_CONF) == ["sublane-1", "sublane-2"]


def _docker_compose_works() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=20, check=False)
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and info.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _docker_compose_works(), reason="no container runtime answers here (`docker info`)")
def test_scale_6_docker_compose_up_serves_on_one_port() -> None:
    env = {
        **os.environ,
        "SUBLANE_CREDENTIALS_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        "SUBLANE_ADMIN_PASSWORD": "admin-pass-1",
        "POSTGRES_PASSWORD": secrets.token_hex(12),
    }
    command = [
        "docker",
        "compose",
        "-f",
        str(ROOT / "deploy" / "compose.yaml"),
        "-p",
        f"sublane{os.getpid()}",
    ]
    try:
        subprocess.run([*command, "up", "-d", "--build", "--wait"], env=env, check=True, timeout=1800)
        assert httpx.get("http://127.0.0.1:8080/readyz", timeout=5).status_code == 200
    finally:
        subprocess.run([*command, "down", "-v"], env=env, capture_output=True, timeout=300, check=False)


class _Topology:
    """compose.yaml's services run as local processes."""

    def __init__(self, folder: Path, postgres: PostgresServer, redis: RedisServer, sim: Simulator) -> None:
        self.folder = folder
        self.variables = {
            "SUBLANE_CREDENTIALS_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "SUBLANE_ADMIN_PASSWORD": "admin-pass-1",
            "POSTGRES_PASSWORD": "unused-with-trust-authentication",
        }
        database = postgres.new_database().rsplit("/", 1)[1]
        self.hosts = {  # compose's service names and addresses → where the local servers are
            "postgres:5432/sublane": f"127.0.0.1:{postgres.port}/{database}",
            "redis:6379": f"127.0.0.1:{redis.port}",
            NGINX_ADDRESS: "127.0.0.1",  # the local nginx reaches the replicas from loopback
        }
        self.sim = sim
        self.processes: list[subprocess.Popen[bytes]] = []

    def environment(self, service: dict[str, Any], **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("SUBLANE_")}
        for name, value in service["environment"].items():
            text = _interpolate(str(value), self.variables)
            for service_host, local in self.hosts.items():
                text = text.replace(service_host, local)
            env[name] = text.replace(
                "postgresql://sublane:unused-with-trust-authentication@", "postgresql://sublane@"
            )
        env.update(self.sim.env(), **extra)
        return env

    def run(self, name: str) -> subprocess.CompletedProcess[str]:
        service = COMPOSE["services"][name]
        env = self.environment(service, SUBLANE_DATA_DIR=str(self.folder / name))
        return subprocess.run(
            [SUBLANE, *service["command"]], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    def start(self, name: str) -> Replica:
        service = COMPOSE["services"][name]
        port = free_port()
        env = self.environment(service, SUBLANE_DATA_DIR=str(self.folder / name), SUBLANE_PORT=str(port))
        command = [SUBLANE, *service["command"]]
        command[command.index("0.0.0.0")] = "127.0.0.1"  # noqa: S104 - loopback here, not in a container
        log = self.folder / f"{name}.log"
        with log.open("a") as output:
            process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        self.processes.append(process)
        replica = Replica(f"http://127.0.0.1:{port}", process, log)
        wait_ready(replica)
        return replica

    def front(self, replicas: dict[str, Replica]) -> str:
        """nginx with deploy/nginx.conf, its upstreams and port made local; its URL."""
        assert NGINX is not None
        port = free_port()
        conf = NGINX_CONF.replace("listen 8080;", f"listen 127.0.0.1:{port};")
        for name, replica in replicas.items():
            conf = conf.replace(f"server {name}:8080", f"server {replica.url.removeprefix('http://')}")
        conf = conf.replace("/tmp/sublane-nginx", str(self.folder / "nginx"))  # noqa: S108 - the file's own paths
        path = self.folder / "nginx.conf"
        path.write_text(conf)
        with (self.folder / "nginx.log").open("a") as log:
            process = subprocess.Popen(
                [NGINX, "-c", str(path), "-p", str(self.folder), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        self.processes.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    return url
            except httpx.TransportError:
                pass
            assert process.poll() is None, (self.folder / "nginx.log").read_text()
            assert time.monotonic() < deadline, (self.folder / "nginx.log").read_text()
            time.sleep(0.1)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()


@pytest.fixture
def topology(sim: Simulator, tmp_path: Path) -> Iterator[_Topology]:
    if NGINX is None or REDIS_SERVER is None:
        pytest.skip("needs nginx and redis-server (.ci/run installs Debian's packages)")
    with running_postgres() as postgres, running_redis() as redis:
        made = _Topology(tmp_path, postgres, redis, sim)
        try:
            yield made
        finally:
            made.stop()


def test_scale_6_the_compose_topology_serves_through_one_port_on_either_replica(
    topology: _Topology, sim: Simulator
) -> None:
    migrated = topology.run("migrate")  # the one-shot service, before any replica
    assert migrated.returncode == 0, migrated.stderr
    replicas = {name: topology.start(name) for name in ("sublane-1", "sublane-2")}
    url = topology.front(replicas)
    admin = httpx.Client(base_url=url, timeout=30)
    assert admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}).is_success
    account = sim.create_account("codex")
    body = {"provider": "codex", "name": "c1", "credentials": account.credentials, "group_ids": [1]}
    assert admin.post("/api/accounts/import", json=body).status_code == 201
    key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    time.sleep(1)
    with httpx.Client(base_url=url, timeout=30, headers={"authorization": f"Bearer {key}"}) as member:
        for _ in range(6):  # nginx spreads them; either replica serves them
            answer = member.post("/v1/responses", json=BODY, headers={"session_id": "thread-1"})
            assert answer.status_code == 200, answer.text
        with member.stream("POST", "/v1/responses", json={**BODY, "stream": True}) as streaming:
            assert "response.completed" in "".join(streaming.iter_lines())  # unbuffered SSE through it
        # SCALE-3: once no slot is held, every finished call's record is written; then a replica dies.
        deadline = time.monotonic() + 5
        while any(item["in_flight"] for item in admin.get("/api/accounts/runtime").json()["accounts"]):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        replicas["sublane-1"].kill()  # one replica down: the port still serves
        for _ in range(4):
            assert member.post("/v1/responses", json=BODY).status_code == 200
    records = admin.get("/api/requests").json()["items"]
    assert len(records) == 11  # every call recorded, whichever replica served it (SCALE-3, SCALE-5)
    assert sim.requests(account_id=account.id)[-1].headers.get("session_id") in (None, "thread-1")
    admin.close()


def test_auth_3_compose_trusts_only_nginx_as_a_proxy() -> None:
    """The replicas believe X-Forwarded-For from nginx's fixed address alone, never from anyone."""
    edge = COMPOSE["networks"]["edge"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(NGINX_ADDRESS) in ipaddress.ip_network(edge)
    for name in ("sublane-1", "sublane-2"):
        service = COMPOSE["services"][name]
        assert json.loads(service["environment"]["SUBLANE_TRUSTED_PROXIES"]) == [NGINX_ADDRESS]
        assert "edge" in service["networks"]
    assert "X-Forwarded-For $proxy_add_x_forwarded_for" in NGINX_CONF  # nginx adds the peer it saw


def test_auth_3_a_keys_client_networks_see_the_real_client_address_through_the_compose_topology(
    topology: _Topology, sim: Simulator
) -> None:
    """Clients from two loopback addresses reach nginx's one port: a key limited to one of them
    serves it on either replica and refuses the other, even one that forges X-Forwarded-For."""
    assert topology.run("migrate").returncode == 0
    replicas = {name: topology.start(name) for name in ("sublane-1", "sublane-2")}
    url = topology.front(replicas)
    admin = httpx.Client(base_url=url, timeout=30)
    assert admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}).is_success
    account = sim.create_account("codex")
    body = {"provider": "codex", "name": "c1", "credentials": account.credentials, "group_ids": [1]}
    assert admin.post("/api/accounts/import", json=body).status_code == 201
    made = admin.post("/api/me/keys", json={"name": "office", "group_id": 1, "allowed_ips": ["127.0.0.2"]})
    assert made.status_code == 201, made.text
    key = made.json()["secret"]
    time.sleep(1)

    def client_from(address: str) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=address)
        headers = {"authorization": f"Bearer {key}"}
        return httpx.Client(base_url=url, timeout=30, headers=headers, transport=transport)

    with client_from("127.0.0.2") as office, client_from("127.0.0.3") as elsewhere:
        for _ in range(4):  # nginx spreads them over both replicas
            answer = office.post("/v1/responses", json=BODY)
            assert answer.status_code == 200, answer.text
        refused = elsewhere.post("/v1/responses", json=BODY)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "ip_not_allowed"
        forged = elsewhere.post("/v1/responses", json=BODY, headers={"x-forwarded-for": "127.0.0.2"})
        assert forged.status_code == 403 and forged.json()["error"]["code"] == "ip_not_allowed"
    admin.close()


@pytest.mark.e2e
def test_scale_6_the_real_clients_work_through_the_compose_port_and_both_replicas(
    topology: _Topology, sim: Simulator, tmp_path: Path
) -> None:
    for name in ("codex", "claude", "gemini"):
        _client(name)
    assert topology.run("migrate").returncode == 0
    replicas = {name: topology.start(name) for name in ("sublane-1", "sublane-2")}
    url = topology.front(replicas)
    admin = httpx.Client(base_url=url, timeout=30)
    assert admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}).is_success
    accounts = {
        "codex": sim.create_account("codex"),
        "claude": sim.create_account("claude"),
        "antigravity": sim.create_account("antigravity", models=GEMINI_MODELS),
    }
    for provider, account in accounts.items():
        body = {"provider": provider, "name": provider, "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    time.sleep(1)
    for websocket in (False, True):  # Responses over HTTP and over nginx's upgraded WebSocket
        done = codex_exec(url, key, tmp_path, websocket=websocket)
        assert done.returncode == 0, done.stderr[-3000:]
        assert ANSWER in done.stdout
    session = str(uuid.uuid4())
    claude = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key}
    first = _run_cli("claude", tmp_path, ("-p", "--session-id", session, "say hi"), **claude)
    second = _run_cli("claude", tmp_path, ("-p", "--resume", session, "say hi again"), **claude)
    assert first.returncode == 0 and second.returncode == 0, (first.stderr + second.stderr)[-3000:]
    assert ANSWER in first.stdout and ANSWER in second.stdout
    gemini = gemini_run(url, key, tmp_path, "-p", "say hi", "-m", "gemini-3-flash")
    assert gemini.returncode == 0, gemini.stderr[-3000:]
    assert ANSWER in gemini.stdout
    endpoints = {record.endpoint for record in sim.requests(account_id=accounts["codex"].id)}
    assert {"codex.responses", "codex.ws.turn"} <= endpoints
    records = admin.get("/api/requests").json()["items"]
    assert all(record["outcome"] == "success" for record in records)
    admin.close()
