"""The ``sublane`` command as a user runs it: a real process, a real port, a real database file."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from ports import free_port as _free_port

SUBLANE = shutil.which("sublane", path=str(Path(sys.executable).parent)) or "sublane"


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SUBLANE_")}
    env.update({"SUBLANE_DATA_DIR": str(data_dir), "SUBLANE_LOG_FORMAT": "json"}, **extra)
    return env


@contextmanager
def serve(data_dir: Path, log: Path | None = None, **extra: str) -> Iterator[str]:
    """Run ``sublane serve`` until the block ends; its output goes to ``log``."""
    port = _free_port()
    log = log or data_dir.parent / "serve.log"
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as output:
        process = subprocess.Popen(
            [SUBLANE, "serve", "--port", str(port)],
            env=_env(data_dir, **extra),
            cwd=data_dir.parent,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"sublane serve exited:\n{log.read_text()}")
            try:
                httpx.get(f"{url}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_serve_help_lists_every_setting() -> None:
    result = subprocess.run(
        [SUBLANE, "serve", "--help"], capture_output=True, text=True, check=True, timeout=60
    )
    for variable in (
        "SUBLANE_DATA_DIR",
        "SUBLANE_WORKSPACE_CAPACITY",
        "SUBLANE_CODEX_BASE_URL",
        "SUBLANE_HISTORY_DAYS",
    ):
        assert variable in result.stdout


def test_store_1_migrate_creates_the_database_and_is_repeatable(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = subprocess.run(
        [SUBLANE, "migrate"], env=_env(data_dir), capture_output=True, text=True, timeout=60
    )
    assert first.returncode == 0, first.stderr
    assert (data_dir / "sublane.db").exists()
    assert "upgraded from empty" in first.stderr
    second = subprocess.run(
        [SUBLANE, "migrate"], env=_env(data_dir), capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 0 and "upgraded" not in second.stderr


def test_invalid_settings_fail_with_a_clear_message(tmp_path: Path) -> None:
    result = subprocess.run(
        [SUBLANE, "migrate"],
        env=_env(tmp_path / "data", SUBLANE_WORKSPACE_CAPACITY="none"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "SUBLANE_WORKSPACE_CAPACITY" in result.stderr


def test_ops_6_trusted_proxies_as_the_docs_write_them(tmp_path: Path) -> None:
    """A plain address, a comma-separated list and a JSON list start; anything else is refused with
    one clear line naming the variable, never a traceback."""
    for written in ("127.0.0.1", "127.0.0.1, ::1, 10.0.0.0/8", '["127.0.0.1", "::1"]'):
        with serve(tmp_path / "data", SUBLANE_TRUSTED_PROXIES=written) as url:
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    for written in ("not-an-address", '["127.0.0.1"', "[1, 2]"):
        result = subprocess.run(
            [SUBLANE, "migrate"],
            env=_env(tmp_path / "data", SUBLANE_TRUSTED_PROXIES=written),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        assert "SUBLANE_TRUSTED_PROXIES" in result.stderr


CODEX_AUTH_JSON = {
    "tokens": {
        "access_token": "at-cli-PLAINTEXT",
        "refresh_token": "rt-cli-PLAINTEXT",
        "account_id": "acct-cli",
    },
    "last_refresh": "2026-11-01T00:00:00Z",
}


def test_readme_quick_start_flow_over_a_real_process(tmp_path: Path) -> None:
    """Sign in as the bootstrap admin, add a member, a group, a key, a Codex account and a limit."""
    data_dir = tmp_path / "data"
    with serve(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1") as url:
        admin = httpx.Client(base_url=url, timeout=10)
        assert (
            admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}).status_code
            == 200
        )
        member = admin.post("/api/users", json={"username": "bob", "password": "bob-pass-12"}).json()
        group = admin.post("/api/groups", json={"name": "team"}).json()
        admin.put(f"/api/groups/{group['id']}/members", json={"user_ids": [member["id"]]})
        key = admin.post(f"/api/users/{member['id']}/keys", json={"name": "laptop", "group_id": group["id"]})
        assert key.status_code == 201 and key.json()["secret"].startswith("sl_")
        account = admin.post(
            "/api/accounts/import",
            json={
                "provider": "codex",
                "name": "plus-1",
                "credentials": CODEX_AUTH_JSON,
                "group_ids": [group["id"]],
            },
        )
        assert account.status_code == 201
        limit = admin.patch(f"/api/accounts/{account.json()['id']}/limits", json={"max_concurrency": 4})
        assert limit.json()["max_concurrency"] == 4
        admin.close()
    assert oct((data_dir / "credentials.key").stat().st_mode & 0o777) == "0o600"
    # State survives a restart, and the stored secrets stay sealed.
    with serve(data_dir) as url:
        client = httpx.Client(base_url=url, timeout=10)
        assert (
            client.post("/api/auth/login", json={"username": "bob", "password": "bob-pass-12"}).status_code
            == 200
        )
        assert [item["name"] for item in client.get("/api/me/keys").json()["items"]] == ["laptop"]
        client.close()
    assert b"PLAINTEXT" not in (data_dir / "sublane.db").read_bytes()


def test_cred_9_serve_refuses_to_start_without_the_key_of_stored_credentials(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1") as url:
        admin = httpx.Client(base_url=url, timeout=10)
        admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"})
        admin.post(
            "/api/accounts/import", json={"provider": "codex", "name": "a", "credentials": CODEX_AUTH_JSON}
        )
        admin.close()
    (data_dir / "credentials.key").unlink()
    result = subprocess.run(
        [SUBLANE, "serve", "--port", str(_free_port())],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "credentials.key" in result.stderr and "backup" in result.stderr
    assert not (data_dir / "credentials.key").exists()


def _reset(env: dict[str, str], username: str, stdin: str) -> subprocess.CompletedProcess[str]:
    command = [SUBLANE, "admin", "reset-password", username]
    return subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, timeout=60)


def test_admin_reset_password_reads_stdin(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = _env(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1")
    with serve(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1"):
        pass
    reset = _reset(env, "admin", "a-new-password\n")
    assert reset.returncode == 0, reset.stderr
    assert "a-new-password" not in reset.stderr + reset.stdout
    unknown = _reset(env, "ghost", "whatever-123\n")
    assert unknown.returncode != 0 and "ghost" in unknown.stderr
    short = _reset(env, "admin", "short\n")
    assert short.returncode != 0
    with serve(data_dir) as url:
        client = httpx.Client(base_url=url, timeout=10)
        ok = client.post("/api/auth/login", json={"username": "admin", "password": "a-new-password"})
        assert ok.status_code == 200
        client.close()


def test_auth_1_the_last_admin_resets_their_lost_second_factor_from_the_shell(tmp_path: Path) -> None:
    import pyotp

    data_dir = tmp_path / "data"
    env = _env(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1")
    login = {"username": "admin", "password": "admin-pass-1"}
    with serve(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1") as url:
        client = httpx.Client(base_url=url, timeout=10, headers={"origin": url})
        assert client.post("/api/auth/login", json=login).status_code == 200
        secret = client.post("/api/me/totp/setup").json()["secret"]
        assert client.post("/api/me/totp/enable", json={"code": pyotp.TOTP(secret).now()}).status_code == 200
        client.close()
    reset = subprocess.run(
        [SUBLANE, "admin", "reset-totp", "admin"], env=env, capture_output=True, text=True, timeout=60
    )
    assert reset.returncode == 0, reset.stderr
    with serve(data_dir) as url:
        client = httpx.Client(base_url=url, timeout=10)
        assert client.post("/api/auth/login", json=login).status_code == 200  # the password alone again
        client.close()


def test_store_4_logs_never_show_secrets(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "serve.log"
    with serve(
        data_dir, log, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-SECRET"
    ) as url:
        client = httpx.Client(base_url=url, timeout=10)
        client.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-SECRET"})
        client.post("/api/auth/login", json={"username": "admin", "password": "wrong-SECRET"})
        client.post(
            "/api/accounts/import", json={"provider": "codex", "name": "a", "credentials": CODEX_AUTH_JSON}
        )
        client.post(
            "/api/accounts/import", json={"provider": "codex", "name": "b", "credentials": {"tokens": 5}}
        )
        client.close()
    output = log.read_text()
    assert "Uvicorn running" in output  # the log was written at all
    assert "SECRET" not in output
    assert "PLAINTEXT" not in output


def test_make_demo_serves_a_model_call(tmp_path: Path) -> None:
    """``make demo`` (scripts/demo.py): simulator + gateway + key, and the printed curl works."""
    port = _free_port()
    log = tmp_path / "demo.log"
    repo = Path(__file__).resolve().parents[1]
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, str(repo / "scripts" / "demo.py")],
            env={**_env(tmp_path / "unused"), "SUBLANE_PORT": str(port)},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "member key" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        key = log.read_text().split("member key")[1].split()[0]
        response = httpx.post(
            f"http://127.0.0.1:{port}/v1/responses",
            headers={"authorization": f"Bearer {key}"},
            json={"model": "gpt-5-codex", "input": "say hi", "stream": True},
            timeout=30,
        )
        assert response.status_code == 200
        assert "response.completed" in response.text
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_adm_9_shutdown_ends_running_requests(tmp_path: Path, sim: Any) -> None:
    from sublane_sim import Behaviour

    account = sim.create_account("codex")
    sim.set_default(account.id, Behaviour.ok(deltas=200, pacing_ms=100))  # a 20 s stream
    data_dir = tmp_path / "data"
    env = {"SUBLANE_ADMIN_USERNAME": "admin", "SUBLANE_ADMIN_PASSWORD": "admin-pass-1", **sim.env()}
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [SUBLANE, "serve", "--port", str(port)],
            env=_env(data_dir, **env),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        admin = httpx.Client(base_url=url, timeout=10)
        admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"})
        admin.post(
            "/api/accounts/import",
            json={"provider": "codex", "name": "a", "credentials": account.credentials, "group_ids": [1]},
        )
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        admin.close()
        with httpx.Client(base_url=url, timeout=30, headers={"authorization": f"Bearer {key}"}) as client:
            body = {"model": "gpt-5-codex", "input": "hi", "stream": True}
            with client.stream("POST", "/v1/responses", json=body) as response:
                lines = response.iter_lines()
                assert any("output_text.delta" in line for line in lines)
                stopped = time.monotonic()
                process.terminate()
                with contextlib.suppress(httpx.HTTPError):
                    for _ in lines:
                        pass
        process.wait(timeout=15)
        assert time.monotonic() - stopped < 10  # the 20 s stream did not hold the shutdown
        assert sim.counters(account.id).completed == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_ops_3_serve_refuses_a_wrong_but_well_formed_key(tmp_path: Path) -> None:
    # Found by probing: another valid key was accepted, accounts showed ready and every call 500ed.
    data_dir = tmp_path / "data"
    with serve(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1"):
        pass  # the first start seals the check value with the key it created
    key_file = data_dir / "credentials.key"
    original = key_file.read_bytes()
    key_file.write_bytes(base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=") + b"\n")
    result = subprocess.run(
        [SUBLANE, "serve", "--port", str(_free_port())],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "does not open the credentials" in result.stderr and "backup" in result.stderr
    key_file.write_bytes(original)
    with serve(data_dir) as url:  # the right key starts again
        assert httpx.get(f"{url}/api/me", timeout=10).status_code == 401


def test_ops_7_open_data_files_are_tightened_at_start(tmp_path: Path) -> None:
    # Found by probing: a 0644 credentials.key and 0644 database files were used silently.
    data_dir = tmp_path / "data"
    log = tmp_path / "serve.log"
    with serve(data_dir, log, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1"):
        pass
    data_dir.chmod(0o755)
    for name in ("credentials.key", "sublane.db"):
        (data_dir / name).chmod(0o644)
    with serve(data_dir, log):
        pass
    assert oct(data_dir.stat().st_mode & 0o777) == "0o700"
    for name in ("credentials.key", "sublane.db"):
        assert oct((data_dir / name).stat().st_mode & 0o777) == "0o600", name
    assert "set to 600 (OPS-7)" in log.read_text()


def test_ops_7_a_fresh_data_folder_is_private_from_its_first_file(tmp_path: Path) -> None:
    # Found by trying `make run`: the first start warned about the files it had just made (SQLite
    # created the database 0644, and its -wal and -shm files copy the database's mode).
    data_dir = tmp_path / "data"
    log = tmp_path / "serve.log"
    with serve(data_dir, log, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1"):
        modes = {path.name: oct(path.stat().st_mode & 0o777) for path in data_dir.iterdir()}
    assert {"sublane.db", "sublane.db-wal", "sublane.db-shm", "credentials.key"} <= set(modes)
    assert set(modes.values()) == {"0o600"}, modes
    assert oct(data_dir.stat().st_mode & 0o777) == "0o700"
    assert "OPS-7" not in log.read_text()


def _read_answer(sock: socket.socket) -> bytes:
    """One whole HTTP/1.1 answer with a ``content-length`` body."""

    def more() -> bytes:
        received = sock.recv(65536)
        if not received:
            raise ConnectionError("the gateway closed the connection")
        return received

    data = b""
    while b"\r\n\r\n" not in data:
        data += more()
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += more()
    return head


def test_ops_4_every_request_of_a_kept_connection_gets_its_own_header_time(tmp_path: Path) -> None:
    """The header timer is the connection's, not the request's: a quick request after the first
    one's header time ran out keeps its socket, and a later request trickled byte by byte still
    loses it within the timeout counted from its own first byte."""
    data_dir = tmp_path / "data"
    with serve(data_dir, SUBLANE_CLIENT_HEADER_TIMEOUT_S="1", SUBLANE_KEEP_ALIVE_TIMEOUT_S="30") as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            sock.sendall(request)
            assert _read_answer(sock).startswith(b"HTTP/1.1 200")
            time.sleep(1.5)  # past the first request's header time, idle: the socket stays
            sock.sendall(request)
            assert _read_answer(sock).startswith(b"HTTP/1.1 200")
            time.sleep(0.3)  # the timer is armed for the second request's time; this one's is later
            started = time.monotonic()
            sock.settimeout(0.25)
            closed = False
            for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
                try:
                    sock.sendall(bytes([byte]))
                    closed = sock.recv(1) == b""
                except TimeoutError:
                    pass
                except OSError:
                    closed = True
                if closed:
                    break
            assert closed and 0.9 <= time.monotonic() - started < 3


def test_ops_4_keep_alive_counts_from_the_last_answer_and_ends_an_idle_connection(tmp_path: Path) -> None:
    """``SUBLANE_KEEP_ALIVE_TIMEOUT_S``: a connection used again within it stays open however long it
    lives, and one left idle longer is closed by the gateway."""
    data_dir = tmp_path / "data"
    with serve(data_dir, SUBLANE_KEEP_ALIVE_TIMEOUT_S="1") as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            started = time.monotonic()
            for _ in range(4):  # 2.1 s in all, never 1 s idle
                sock.sendall(request)
                assert _read_answer(sock).startswith(b"HTTP/1.1 200")
                time.sleep(0.7)
            assert time.monotonic() - started > 2
            sock.sendall(request)
            assert _read_answer(sock).startswith(b"HTTP/1.1 200")
            idle_from = time.monotonic()
            sock.settimeout(5)
            assert sock.recv(1) == b""  # closed by the gateway
            assert 0.9 <= time.monotonic() - idle_from < 3


def test_ops_4_a_header_trickled_byte_by_byte_loses_its_socket(tmp_path: Path) -> None:
    # Found by probing: a header sent one byte every 2 s kept its socket 24 s and more.
    data_dir = tmp_path / "data"
    with serve(data_dir, SUBLANE_CLIENT_HEADER_TIMEOUT_S="1") as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            started = time.monotonic()
            closed = False
            for byte in b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
                try:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.2)
                    sock.setblocking(False)
                    try:
                        closed = sock.recv(1) == b""
                    except BlockingIOError:
                        pass
                    finally:
                        sock.setblocking(True)
                except OSError:
                    closed = True
                if closed:
                    break
            assert closed and time.monotonic() - started < 4
        assert httpx.get(f"{url}/openapi.json", timeout=5).status_code == 200  # normal clients are fine
