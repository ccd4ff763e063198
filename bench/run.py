"""``make bench``: SubLane against a direct call to the same upstream, scenario by scenario.

Layout on a 2-core machine: the gateway (``sublane serve``: uvicorn, httptools, uvloop, one worker)
pinned to core 0; the lean mock upstream (``bench/mock.py``) and this driver pinned to core 1.
LiteLLM proxy, when it can be installed into its own throwaway virtualenv, also runs on core 0 (its
turns never overlap the gateway's). Every scenario measures "direct" (driver → mock) and
"gateway" (driver → SubLane → mock) with the same client and concurrency, interleaved, and writes
both, the difference and the ratio. One JSON file per run: ``bench/results/<UTC timestamp>.json``
(and a copy in ``bench/results/latest.json``).

``BENCH_QUICK=1`` shortens every scenario (for development; the numbers are noisier).
``BENCH_LITELLM=0`` skips LiteLLM.
"""

# ruff: noqa: S603  (this script's whole job is starting our own processes with fixed arguments)
from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvloop
from driver import Connection, Target, closed_loop, median, ms, percentile

from sublane_sim import Simulator

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RESULTS = ROOT / "bench" / "results"
QUICK = os.environ.get("BENCH_QUICK") == "1"
WITH_LITELLM = os.environ.get("BENCH_LITELLM", "1") != "0"
# BENCH_ONLY=S1: S1 and the feature pricing only, written to results/latest-s1.json (latest.json stays).
ONLY_S1 = os.environ.get("BENCH_ONLY") == "S1"
# BENCH_FEATURE_ROUNDS=40: more rounds of 25 per side for the feature pricing (less noise; slower).
FEATURE_ROUNDS = int(os.environ.get("BENCH_FEATURE_ROUNDS", "0"))
LITELLM_VENV = Path(os.environ.get("BENCH_LITELLM_VENV", ROOT / ".cache" / "bench-litellm-venv"))
ADMIN = ("bench-admin", "bench-admin-password")
MODEL = "gpt-5-codex"
CLAUDE_MODEL = "claude-haiku-4-5"  # an alias (CAT-2): what most people type
ANTHROPIC_VERSION = {"anthropic-version": "2023-06-01"}
LITELLM_KEY = "sk-bench-litellm-master-key-0123456789abcdef"  # a throwaway local proxy's key
GATEWAY_CORE, DRIVER_CORE = "0", "1"


def log(message: str) -> None:
    """Progress on stderr, with the time."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Processes:
    """Child processes, each its own process group, all killed on exit."""

    def __init__(self) -> None:
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
        """Start ``args`` in a new session (so its whole group can be killed)."""
        with log_path.open("wb") as out:
            child = subprocess.Popen(
                args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.children.append(child)
        return child

    def stop(self, child: subprocess.Popen[bytes]) -> None:
        """TERM the child's group, KILL it if it lingers."""
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=8)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=5)

    def stop_all(self) -> None:
        """Stop every child, newest first."""
        for child in reversed(self.children):
            self.stop(child)


def wait_http(url: str, child: subprocess.Popen[bytes], seconds: float = 60) -> None:
    """Poll ``url`` until it answers (any status) or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    for _ in range(10_000):
        if child.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {child.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=1)
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {seconds} s")


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` and its children (MB)."""
    total = 0
    pids = [pid]
    with contextlib.suppress(OSError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(p) for p in children]
    for one in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def environment() -> dict[str, Any]:
    """The machine, for the results file and BENCHMARKS.md."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with contextlib.suppress(OSError):
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "kernel": platform.release(),
    }


# ---------------------------------------------------------------------------------------- set-up


def mint_codex_credentials() -> dict[str, Any]:
    """An importable ~/.codex/auth.json, minted by the simulator (its tokens are unsigned JWTs)."""
    with Simulator(seed=1) as sim:
        account = sim.create_account("codex", access_ttl_s=7 * 86400, require_stream=False)
        return {
            "credentials": account.credentials,
            "access_token": account.access_token,
            "account_id": account.account_id,
        }


def mint_claude_credentials() -> dict[str, Any]:
    """An importable ~/.claude/.credentials.json, minted by the simulator."""
    with Simulator(seed=2) as sim:
        return sim.create_account("claude", access_ttl_s=7 * 86400).credentials


def seed_gateway(
    url: str,
    credentials: dict[str, Any],
    *,
    budget: bool = True,
    claude_credentials: dict[str, Any] | None = None,
) -> tuple[str, int]:
    """Create the member, its key and the account through the management API; (key, account id).

    ``budget``: the member gets a token budget (TEAM-4) too large to refuse anything, so every
    request pays for the budget check, as a member with budgets does. ``claude_credentials``: a
    Claude account joins the group too (the translation pricing).
    """
    with httpx.Client(base_url=url, timeout=30) as admin:

        def ok(response: httpx.Response) -> Any:
            if response.status_code >= 300:
                raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")
            return response.json()

        ok(admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}))
        user = ok(admin.post("/api/users", json={"username": "bench", "password": "bench-member-password"}))
        ok(admin.patch(f"/api/users/{user['id']}", json={"member_concurrency": 0}))
        if budget:
            rules = [{"period": "month", "limit": 10**12}, {"group_id": 1, "period": "day", "limit": 10**12}]
            ok(admin.put(f"/api/users/{user['id']}/budgets", json={"rules": rules}))
        key = ok(admin.post(f"/api/users/{user['id']}/keys", json={"name": "bench", "group_id": 1}))
        account_id = import_account(admin, "codex", "bench-codex", credentials)
        if claude_credentials is not None:
            import_account(admin, "claude", "bench-claude", claude_credentials)
        return key["secret"], account_id


def import_account(admin: httpx.Client, provider: str, name: str, credentials: dict[str, Any]) -> int:
    """An account of ``provider`` in group 1 with no concurrency limit to speak of; its id."""
    body = {"provider": provider, "name": name, "group_ids": [1], "credentials": credentials}
    imported = admin.post("/api/accounts/import", json=body)
    if imported.status_code >= 300:
        raise RuntimeError(f"account import: {imported.status_code} {imported.text}")
    account_id = int(imported.json()["id"])
    admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 1000}).raise_for_status()
    return account_id


def start_relay(procs: Processes, tmp: Path, upstream_port: int) -> int:
    """bench/relay.py on the gateway's core in front of ``upstream_port``; its port."""
    port = free_port()
    args = ["taskset", "-c", GATEWAY_CORE, sys.executable, str(ROOT / "bench" / "relay.py")]
    args += ["--port", str(port), "--upstream-port", str(upstream_port)]
    relay = procs.start(args, dict(os.environ), tmp / "relay.log")
    wait_http(f"http://127.0.0.1:{port}/_mock/stats", relay)
    return port


def start_mock_and_gateway(procs: Processes, tmp: Path) -> tuple[subprocess.Popen[bytes], Target]:
    """The mock (core 1) and a seeded ``sublane serve`` (core 0) in front of it: the gateway's
    process and its ``/v1/responses`` target with the bench member's key (profile.py, cpu.py)."""
    mock_port = free_port()
    mock_url = f"http://127.0.0.1:{mock_port}"
    mock_args = ["taskset", "-c", DRIVER_CORE, sys.executable, str(ROOT / "bench" / "mock.py")]
    mock = procs.start([*mock_args, "--port", str(mock_port)], dict(os.environ), tmp / "mock.log")
    wait_http(f"{mock_url}/_mock/stats", mock)
    creds = mint_codex_credentials()
    gateway_proc, gateway_url = start_gateway(procs, tmp, mock_url)
    key, _ = seed_gateway(gateway_url, creds["credentials"])
    port = int(gateway_url.rsplit(":", 1)[1])
    return gateway_proc, Target(
        "gateway", "127.0.0.1", port, "/v1/responses", {"Authorization": f"Bearer {key}"}
    )


def add_codex_accounts(url: str, count: int) -> None:
    """``count`` more Codex accounts (fresh credentials) in group 1."""
    with httpx.Client(base_url=url, timeout=30) as admin:
        admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}).raise_for_status()
        for index in range(count):
            import_account(
                admin, "codex", f"bench-codex-{index + 2}", mint_codex_credentials()["credentials"]
            )


def set_account_concurrency(url: str, account_id: int, limit: int) -> None:
    """PATCH the account's ``max_concurrency``."""
    with httpx.Client(base_url=url, timeout=30) as admin:
        admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}).raise_for_status()
        admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": limit}).raise_for_status()


def install_litellm() -> tuple[Path | None, str]:
    """LiteLLM proxy in its own throwaway virtualenv (never a project dependency)."""
    litellm = LITELLM_VENV / "bin" / "litellm"
    if litellm.exists():
        return litellm, "reused " + str(LITELLM_VENV)
    log(f"installing litellm[proxy] into {LITELLM_VENV} …")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True, timeout=120)
        pip = [str(LITELLM_VENV / "bin" / "pip"), "install", "--quiet", "litellm[proxy]"]
        subprocess.run(pip, check=True, timeout=600, capture_output=True)
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"install failed: {exc}"
    return litellm, "installed into " + str(LITELLM_VENV)


def litellm_version() -> str:
    """The installed LiteLLM version."""
    python = LITELLM_VENV / "bin" / "python"
    code = "import importlib.metadata as m; print(m.version('litellm'))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return out.stdout.strip()


# ---------------------------------------------------------------------------------------- bodies


def responses_body(
    *, stream: bool, deltas: int = 4, pacing_ms: int = 0, quota: bool = True, model: str = MODEL
) -> bytes:
    """The Responses request every side gets (only ``stream`` differs between scenarios).

    ``quota=False`` asks the mock for no rate-limit headers (no quota signal for the gateway).
    """
    body = {
        "model": model,
        "instructions": f"bench:deltas={deltas},pacing={pacing_ms}" + ("" if quota else " bench:noquota"),
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "stream": stream,
        "store": False,
    }
    turns = int(os.environ.get("BENCH_CONVERSATION", "0"))
    if turns:  # a later turn of a conversation with this many earlier items (COST-4, AFF)
        item = body["input"][0]
        body["input"] = [item] * turns + body["input"]
        body["prompt_cache_key"] = "bench-conversation"
    return json.dumps(body, separators=(",", ":")).encode()


def messages_body(*, stream: bool, model: str, deltas: int = 4) -> bytes:
    """The Anthropic Messages request of the translation pricing (the marker in ``system``)."""
    body = {
        "model": model,
        "max_tokens": 256,
        "system": f"bench:deltas={deltas},pacing=0",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def chat_body(*, stream: bool, deltas: int = 4) -> bytes:
    """The Chat Completions request for the LiteLLM comparison."""
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": f"bench:deltas={deltas},pacing=0"},
            {"role": "user", "content": "hi"},
        ],
        "stream": stream,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def compare(direct: float | None, gateway: float | None, digits: int = 3) -> dict[str, float | None]:
    """Both sides, their difference and ratio."""
    if direct is None or gateway is None:
        return {"direct": direct, "gateway": gateway, "difference": None, "ratio": None}
    ratio = round(gateway / direct, 2) if direct else None
    return {
        "direct": direct,
        "gateway": gateway,
        "difference": round(gateway - direct, digits),
        "ratio": ratio,
    }


# ---------------------------------------------------------------------------------------- scenarios


async def s1_latency(
    targets: dict[str, Target], bodies: dict[str, bytes], streaming: bool, rounds: int
) -> dict[str, Any]:
    """Rounds of 25 sequential calls per target, interleaved (order rotates); one connection each."""
    connections = {name: Connection(target) for name, target in targets.items()}
    values: dict[str, list[float]] = {name: [] for name in targets}
    round_medians: dict[str, list[float]] = {name: [] for name in targets}
    failures: dict[str, int] = dict.fromkeys(targets, 0)
    names = list(targets)

    async def one(name: str) -> float | None:
        raw = targets[name].request(bodies[name])
        result = await connections[name].call(raw)
        if not result.complete:
            failures[name] += 1
            return None
        return result.ttft if streaming else result.latency

    for name in names:  # warm-up: connections, caches, JIT-less but lazy imports
        for _ in range(50):
            await one(name)
    for round_no in range(rounds):
        order = names[round_no % len(names) :] + names[: round_no % len(names)]
        for name in order:
            batch = [v for v in [await one(name) for _ in range(25)] if v is not None]
            values[name] += batch
            if batch:
                round_medians[name].append(median(batch) or 0.0)
    for connection in connections.values():
        connection.close()
    out: dict[str, Any] = {"rounds": rounds, "per_round": 25, "failures": failures, "sides": {}}
    for name in names:
        out["sides"][name] = {
            "p50_ms": ms(percentile(values[name], 50)),
            "p99_ms": ms(percentile(values[name], 99)),
            "n": len(values[name]),
        }
    base = "direct"
    for name in names:
        if name == base:
            continue
        deltas = [g - d for g, d in zip(round_medians[name], round_medians[base], strict=False)]
        out[f"{name}_vs_direct"] = {
            "p50_ms": compare(out["sides"][base]["p50_ms"], out["sides"][name]["p50_ms"]),
            "p99_ms": compare(out["sides"][base]["p99_ms"], out["sides"][name]["p99_ms"]),
            "median_round_delta_ms": ms(median(deltas)),
        }
    return out


async def s1_translation(
    procs: Processes,
    tmp: Path,
    mock_url: str,
    codex: dict[str, Any],
    direct_auth: dict[str, str],
    rounds: int,
) -> dict[str, Any]:
    """The price of translation: a gateway with a Codex and a Claude account, each upstream called
    directly, through its own protocol (pass-through) and through the other one (translated:
    Messages → Codex, Responses → Claude), interleaved like S1."""
    child, url = start_gateway(procs, tmp, mock_url, label="xlat")
    key, _ = seed_gateway(url, codex["credentials"], claude_credentials=mint_claude_credentials())
    mock_port, port = (int(u.rsplit(":", 1)[1]) for u in (mock_url, url))
    member = {"Authorization": f"Bearer {key}"}
    host = "127.0.0.1"
    sides = {
        "codex": {
            "direct": Target("direct", host, mock_port, "/backend-api/codex/responses", direct_auth),
            "responses_on_codex": Target("gateway", host, port, "/v1/responses", member),
            "messages_on_codex": Target("gateway", host, port, "/v1/messages", member | ANTHROPIC_VERSION),
        },
        "claude": {
            "direct": Target("direct", host, mock_port, "/v1/messages", ANTHROPIC_VERSION),
            "messages_on_claude": Target("gateway", host, port, "/v1/messages", member | ANTHROPIC_VERSION),
            "responses_on_claude": Target("gateway", host, port, "/v1/responses", member),
        },
    }
    out: dict[str, Any] = {}
    for label, stream in (("non_streaming", False), ("streaming_ttft", True)):
        codex_bodies = {
            "direct": responses_body(stream=stream),
            "responses_on_codex": responses_body(stream=stream),
            "messages_on_codex": messages_body(stream=stream, model=MODEL),
        }
        claude_bodies = {
            "direct": messages_body(stream=stream, model=CLAUDE_MODEL),
            "messages_on_claude": messages_body(stream=stream, model=CLAUDE_MODEL),
            "responses_on_claude": responses_body(stream=stream, model=CLAUDE_MODEL),
        }
        out[label] = {
            "codex": await s1_latency(sides["codex"], codex_bodies, streaming=stream, rounds=rounds),
            "claude": await s1_latency(sides["claude"], claude_bodies, streaming=stream, rounds=rounds),
        }
    procs.stop(child)
    return out


async def s2_sweep(
    targets: dict[str, Target], bodies: dict[str, bytes], levels: list[int], seconds: float
) -> dict[str, Any]:
    """Closed-loop concurrency sweep on an instant mock; per level every target in turn."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
    for level in levels:
        for name, target in targets.items():
            rows[name].append(await closed_loop(target, target.request(bodies[name]), level, seconds))
        log(
            f"  S2 c={level}: "
            + ", ".join(f"{n} {rows[n][-1]['rps']} rps p99 {rows[n][-1]['p99_ms']} ms" for n in targets)
        )
    summary: dict[str, Any] = {}
    for name in targets:
        summary[name] = {}
        for budget in (10, 50, 100):
            fits = [
                r
                for r in rows[name]
                if r["p99_ms"] is not None and r["p99_ms"] <= budget and r["errors"] == 0
            ]
            best = max(fits, key=lambda r: r["rps"], default=None)
            summary[name][f"rps_at_p99_le_{budget}ms"] = best["rps"] if best else 0.0
            summary[name][f"concurrency_at_p99_le_{budget}ms"] = best["concurrency"] if best else None
    direct_peak = max((r["rps"] for r in rows["direct"]), default=0.0)
    guard = {}
    for name in targets:
        if name == "direct":
            continue
        peak = max((r["rps"] for r in rows[name]), default=0.0)
        guard[name] = {
            "peak_rps": peak,
            "direct_peak_rps": direct_peak,
            "mock_bound": bool(direct_peak and peak > 0.7 * direct_peak),
        }
    return {"seconds_per_level": seconds, "levels": rows, "summary": summary, "mock_bound_guard": guard}


async def paced_level(target: Target, raw: bytes, streams: int, deltas: int) -> dict[str, Any]:
    """``streams`` paced streams at once; TTFT, inter-chunk gaps and lost frames."""
    connections = [Connection(target) for _ in range(streams)]
    results = await asyncio.gather(*(c.call(raw) for c in connections))
    for connection in connections:
        connection.close()
    ttfts = [r.ttft for r in results if r.ttft is not None]
    gaps = [g for r in results for g in r.gaps()]
    lost = sum(max(0, deltas - len(r.deltas)) for r in results)
    return {
        "streams": streams,
        "complete": sum(r.complete for r in results),
        "frames_lost": lost,
        "ttft_p50_ms": ms(percentile(ttfts, 50)),
        "ttft_p99_ms": ms(percentile(ttfts, 99)),
        "gap_p50_ms": ms(percentile(gaps, 50)),
        "gap_p99_ms": ms(percentile(gaps, 99)),
        "gap_max_ms": ms(max(gaps, default=None) if gaps else None),
        "errors": sorted({r.error for r in results if r.error}),
        "statuses": dict(collections.Counter(str(r.status) for r in results)),
        "error_bodies": sorted({r.body.decode(errors="replace")[:200] for r in results if r.status != 200}),
    }


async def s4_paced(
    targets: dict[str, Target], levels: list[int], deltas: int, pacing_ms: int
) -> dict[str, Any]:
    """Paced streams at rising levels, direct then gateway per level."""
    raw_body = responses_body(stream=True, deltas=deltas, pacing_ms=pacing_ms)
    rows = []
    for level in levels:
        row: dict[str, Any] = {"streams": level}
        for name, target in targets.items():
            row[name] = await paced_level(target, target.request(raw_body), level, deltas)
            await asyncio.sleep(0.5)
        row["added_ttft_p50_ms"] = compare(row["direct"]["ttft_p50_ms"], row["gateway"]["ttft_p50_ms"])
        row["added_gap_p50_ms"] = compare(row["direct"]["gap_p50_ms"], row["gateway"]["gap_p50_ms"])
        row["added_gap_p99_ms"] = compare(row["direct"]["gap_p99_ms"], row["gateway"]["gap_p99_ms"])
        rows.append(row)
        g = row["gateway"]
        log(
            f"  S4 {level} streams: gateway lost {g['frames_lost']} gap p99 {g['gap_p99_ms']} ms; "
            f"direct gap p99 {row['direct']['gap_p99_ms']} ms"
        )

    def clean_up_to(side: str) -> int:  # the highest level such that every level up to it lost nothing
        best = 0
        for r in rows:
            if r[side]["frames_lost"] or r[side]["complete"] != r["streams"]:
                break
            best = r["streams"]
        return best

    return {
        "deltas": deltas,
        "pacing_ms": pacing_ms,
        "levels": rows,
        "highest_zero_loss": {"direct": clean_up_to("direct"), "gateway": clean_up_to("gateway")},
    }


async def s6_memory(
    target: Target, gateway_pid: int, streams: int, seconds: float, deltas: int, pacing_ms: int
) -> dict[str, Any]:
    """RSS at idle, then while ``streams`` paced streams run back to back for ``seconds``."""
    idle = rss_mb(gateway_pid)
    raw = target.request(responses_body(stream=True, deltas=deltas, pacing_ms=pacing_ms))
    stop_at = time.perf_counter() + seconds
    completed = 0
    lost = 0
    samples: list[tuple[float, float]] = []

    async def worker() -> None:
        nonlocal completed, lost
        connection = Connection(target)
        for _ in range(1_000_000):
            if time.perf_counter() >= stop_at:
                break
            result = await connection.call(raw)
            completed += result.complete
            lost += max(0, deltas - len(result.deltas))
        connection.close()

    async def sampler() -> None:
        began = time.perf_counter()
        for _ in range(100_000):
            now = time.perf_counter()
            if now >= stop_at:
                break
            samples.append((round(now - began, 1), rss_mb(gateway_pid)))
            await asyncio.sleep(5)

    await asyncio.gather(sampler(), *(worker() for _ in range(streams)))
    await asyncio.sleep(2)
    after = rss_mb(gateway_pid)
    steady = [s for s in samples if s[0] >= 30] or samples
    slope = 0.0
    if len(steady) >= 2:
        xs = [s[0] for s in steady]
        ys = [s[1] for s in steady]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var * 60 if var else 0.0
    return {
        "idle_rss_mb": idle,
        "streams": streams,
        "seconds": seconds,
        "streams_completed": completed,
        "frames_lost": lost,
        "rss_samples_mb": samples,
        "rss_peak_mb": max((s[1] for s in samples), default=idle),
        "rss_after_mb": after,
        "growth_mb_per_min_after_30s": round(slope, 2),
    }


async def s7_cancel(
    gateway: Target, mock_url: str, gateway_url: str, account_id: int, trials: int
) -> dict[str, Any]:
    """A client hangs up mid-stream: when is the upstream cancelled, and when is the lease back?

    The account gets one slot, so the follow-up call (sent the moment the first client hangs up)
    reaches the upstream only once the first call's lease is released.
    """
    set_account_concurrency(gateway_url, account_id, 1)
    long_stream = gateway.request(responses_body(stream=True, deltas=3000, pacing_ms=20))
    quick = gateway.request(responses_body(stream=False))
    cancel_ms: list[float] = []
    next_ms: list[float] = []
    missed = 0
    next_failed = 0
    async with httpx.AsyncClient(timeout=10) as control:
        for _ in range(trials):
            before = len((await control.get(f"{mock_url}/_mock/stats")).json()["disconnects"])
            result = await Connection(gateway).call(long_stream, abort_after_deltas=3)
            follow = Connection(gateway)
            follow_task = asyncio.ensure_future(follow.call(quick))
            seen = None
            for _ in range(400):  # up to 8 s
                await asyncio.sleep(0.02)
                stats = (await control.get(f"{mock_url}/_mock/stats")).json()
                if len(stats["disconnects"]) > before:
                    seen = stats["disconnects"][before]
                    break
            if seen is None or not result.aborted_monotonic:
                missed += 1
            else:
                cancel_ms.append((seen - result.aborted_monotonic) * 1000)
            after = await follow_task
            follow.close()
            if after.complete:
                next_ms.append((after.end - result.aborted_at) * 1000)
            else:
                next_failed += 1
    set_account_concurrency(gateway_url, account_id, 1000)
    within = sum(v <= 100 for v in cancel_ms)
    return {
        "trials": trials,
        "upstream_cancelled_after_p50_ms": round(median(cancel_ms) or 0, 2) if cancel_ms else None,
        "upstream_cancelled_after_max_ms": round(max(cancel_ms), 2) if cancel_ms else None,
        "cancelled_within_100ms": within,
        "not_cancelled_within_8s": missed,
        "lease_back_p50_ms": round(median(next_ms) or 0, 2) if next_ms else None,
        "lease_back_max_ms": round(max(next_ms), 2) if next_ms else None,
        "next_call_failed": next_failed,
        "lease_released": next_failed == 0,
    }


# ---------------------------------------------------------------------------------------- main


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    """A temp folder for data and logs, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="sublane-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def start_gateway(
    procs: Processes,
    tmp: Path,
    mock_url: str,
    *,
    history: bool = True,
    metrics: bool = True,
    team: bool = True,
    quota: bool = True,
    label: str = "",
    extra_env: dict[str, str] | None = None,
    cores: str = GATEWAY_CORE,
) -> tuple[subprocess.Popen[bytes], str]:
    """``sublane serve`` on core 0, its upstream URLs pointing at the mock (``label`` tells two
    gateways of the same settings apart).

    ``history=False`` starts it through ``bench/serve_variant.py`` (recording off, so no usage
    summaries either); ``metrics=False`` with ``SUBLANE_METRICS_ENABLED=false`` (no call counted
    for ``/metrics``); ``team=False`` with ``SUBLANE_USAGE_ENABLED=false`` (no usage summaries and
    no token budgets, TEAM-3/TEAM-4); ``quota=False`` with ``SUBLANE_QUOTA_ENABLED=false`` (no quota
    observer: nothing saved, no background reads, no exclusion; QUOTA, issue #15). ``extra_env``
    adds settings (``bench/scale_out.py``: Redis, workers); ``cores`` is what it is pinned to.
    """
    port = free_port()
    name = (
        "gateway"
        + ("" if history else "-nohistory")
        + ("" if metrics else "-nometrics")
        + ("" if team else "-noteam")
        + ("" if quota else "-noquota")
        + (f"-{label}" if label else "")
    )
    env = (
        os.environ
        | {
            "SUBLANE_METRICS_ENABLED": "true" if metrics else "false",
            "SUBLANE_USAGE_ENABLED": "true" if team else "false",
            "SUBLANE_QUOTA_ENABLED": "true" if quota else "false",
            "SUBLANE_DATA_DIR": str(tmp / f"data-{name}"),
            "SUBLANE_ADMIN_USERNAME": ADMIN[0],
            "SUBLANE_ADMIN_PASSWORD": ADMIN[1],
            "SUBLANE_WORKSPACE_CAPACITY": "5000",
            "SUBLANE_WAIT_QUEUE_MAX": "5000",
            "SUBLANE_WAIT_TIMEOUT_S": "10",
            "SUBLANE_LOG_LEVEL": "WARNING",
            "SUBLANE_CODEX_BASE_URL": f"{mock_url}/backend-api",
            "SUBLANE_OPENAI_AUTH_URL": mock_url,
            "SUBLANE_CLAUDE_BASE_URL": mock_url,
            "SUBLANE_CLAUDE_AUTH_URL": mock_url,
            "SUBLANE_ANTIGRAVITY_BASE_URL": mock_url,
            "SUBLANE_GOOGLE_AUTH_URL": mock_url,
        }
        | (extra_env or {})
    )
    command = (
        [str(BIN / "sublane")] if history else [sys.executable, str(ROOT / "bench" / "serve_variant.py")]
    )
    # BENCH_GATEWAY_PREFIX: a command the gateway runs under (bench/instructions.py: valgrind).
    prefix = os.environ.get("BENCH_GATEWAY_PREFIX", "").split()
    args = ["taskset", "-c", cores, *prefix, *command, "serve", "--port", str(port)]
    child = procs.start(args, env, tmp / f"{name}.log")
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/v1/models", child, 600 if prefix else 60)
    return child, url


def start_litellm(
    procs: Processes, tmp: Path, mock_url: str
) -> tuple[subprocess.Popen[bytes] | None, str, str]:
    """LiteLLM proxy on core 0 forwarding ``gpt-5-codex`` to the mock's Chat Completions."""
    litellm, note = install_litellm()
    if litellm is None:
        return None, "", note
    config = tmp / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {mock_url}/v1\n"
        "      api_key: sk-bench\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "  drop_params: true\n"
    )
    port = free_port()
    env = os.environ | {
        "LITELLM_MASTER_KEY": LITELLM_KEY,
        "LITELLM_LOG": "ERROR",
        "LITELLM_TELEMETRY": "False",
        "PATH": f"{litellm.parent}:{os.environ['PATH']}",
    }
    args = [
        "taskset",
        "-c",
        GATEWAY_CORE,
        str(litellm),
        "--config",
        str(config),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--num_workers",
        "1",
    ]
    child = procs.start(args, env, tmp / "litellm.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health/liveliness", child, seconds=120)
    except (RuntimeError, TimeoutError) as exc:
        tail = (tmp / "litellm.log").read_text(errors="replace")[-2000:]
        procs.stop(child)
        return None, "", f"{note}; did not start: {exc}: {tail}"
    return child, url, f"{note}; litellm {litellm_version()}"


async def scenarios(procs: Processes, tmp: Path, report: dict[str, Any]) -> None:
    """Start everything, then run S1, S2, S4, S6, S7 in turn."""
    mock_port = free_port()
    mock_url = f"http://127.0.0.1:{mock_port}"
    mock_args = [
        "taskset",
        "-c",
        DRIVER_CORE,
        sys.executable,
        str(ROOT / "bench" / "mock.py"),
        "--port",
        str(mock_port),
    ]
    mock = procs.start(mock_args, dict(os.environ), tmp / "mock.log")
    wait_http(f"{mock_url}/_mock/stats", mock)
    creds = mint_codex_credentials()
    gateway_proc, gateway_url = start_gateway(procs, tmp, mock_url)
    key, account_id = seed_gateway(gateway_url, creds["credentials"])
    report["gateway_started_rss_mb"] = rss_mb(gateway_proc.pid)

    direct_auth = {
        "Authorization": f"Bearer {creds['access_token']}",
        "chatgpt-account-id": creds["account_id"],
    }
    member_auth = {"Authorization": f"Bearer {key}"}
    direct = Target("direct", "127.0.0.1", mock_port, "/backend-api/codex/responses", direct_auth)
    gateway = Target("gateway", "127.0.0.1", int(gateway_url.rsplit(":", 1)[1]), "/v1/responses", member_auth)
    both = {"direct": direct, "gateway": gateway}
    rounds = 6 if QUICK else 20

    log("S1 added latency at concurrency 1 (Responses)")
    s1: dict[str, Any] = {}
    plain = {"direct": responses_body(stream=False), "gateway": responses_body(stream=False)}
    streamed = {"direct": responses_body(stream=True), "gateway": responses_body(stream=True)}
    # The floor under any proxy here: a byte relay on the gateway's core (bench/relay.py).
    relay = start_relay(procs, tmp, mock_port)
    with_relay = both | {"relay": Target("relay", "127.0.0.1", relay, direct.path, direct_auth)}
    plain_relay, streamed_relay = plain | {"relay": plain["direct"]}, streamed | {"relay": streamed["direct"]}
    s1["non_streaming"] = await s1_latency(with_relay, plain_relay, streaming=False, rounds=rounds)
    s1["streaming_ttft"] = await s1_latency(with_relay, streamed_relay, streaming=True, rounds=rounds)
    report["scenarios"]["S1"] = s1
    report["load"].append(("after S1", loadavg()))
    log(f"  S1 non-streaming {s1['non_streaming']['gateway_vs_direct']}")
    log(f"  S1 streaming {s1['streaming_ttft']['gateway_vs_direct']}")

    log("S1 features: history recording, quota signals, metrics, usage summaries + budgets on/off")
    bare_proc, bare_url = start_gateway(procs, tmp, mock_url, history=False)
    bare_key, _ = seed_gateway(bare_url, creds["credentials"], budget=False)
    bare_port = int(bare_url.rsplit(":", 1)[1])
    bare = Target("gateway", "127.0.0.1", bare_port, "/v1/responses", {"Authorization": f"Bearer {bare_key}"})
    uncounted_proc, uncounted_url = start_gateway(procs, tmp, mock_url, metrics=False)
    uncounted_key, _ = seed_gateway(uncounted_url, creds["credentials"])
    uncounted = Target(
        "gateway",
        "127.0.0.1",
        int(uncounted_url.rsplit(":", 1)[1]),
        "/v1/responses",
        {"Authorization": f"Bearer {uncounted_key}"},
    )
    noteam_proc, noteam_url = start_gateway(procs, tmp, mock_url, team=False)
    noteam_key, _ = seed_gateway(noteam_url, creds["credentials"], budget=False)
    noteam_port = int(noteam_url.rsplit(":", 1)[1])
    noteam = Target(
        "gateway", "127.0.0.1", noteam_port, "/v1/responses", {"Authorization": f"Bearer {noteam_key}"}
    )
    unobserved_proc, unobserved_url = start_gateway(procs, tmp, mock_url, quota=False)
    unobserved_key, _ = seed_gateway(unobserved_url, creds["credentials"])
    unobserved = Target(
        "gateway",
        "127.0.0.1",
        int(unobserved_url.rsplit(":", 1)[1]),
        "/v1/responses",
        {"Authorization": f"Bearer {unobserved_key}"},
    )
    variants = {
        "direct": direct,
        "all_on": gateway,
        "quota_off": gateway,
        "history_off": bare,
        "both_off": bare,
        "metrics_off": uncounted,
        "team_off": noteam,
        "observer_off": unobserved,  # SUBLANE_QUOTA_ENABLED=false; the headers still come
    }
    features: dict[str, Any] = {}
    for label, stream in (("non_streaming", False), ("streaming_ttft", True)):
        bodies = {
            name: responses_body(stream=stream, quota=name not in ("quota_off", "both_off"))
            for name in variants
        }
        features[label] = await s1_latency(
            variants, bodies, streaming=stream, rounds=FEATURE_ROUNDS or max(4, rounds // 2)
        )
    report["scenarios"]["S1_features"] = features
    log("S1 translation: Messages → Codex and Responses → Claude beside the pass-through cells")
    report["scenarios"]["S1_translation"] = await s1_translation(
        procs, tmp, mock_url, creds, direct_auth, FEATURE_ROUNDS or max(4, rounds // 2)
    )
    procs.stop(bare_proc)
    procs.stop(uncounted_proc)
    procs.stop(noteam_proc)
    procs.stop(unobserved_proc)
    if ONLY_S1:
        return

    levels = [1, 4, 16, 64, 256] if QUICK else [1, 2, 4, 8, 16, 32, 64, 128, 256]
    seconds = 1.0 if QUICK else 2.5
    log("S2 concurrency sweep (Responses, non-streaming, instant mock)")
    report["scenarios"]["S2"] = await s2_sweep(both, plain, levels, seconds)
    report["load"].append(("after S2", loadavg()))

    litellm_child, litellm_url, note = (None, "", "skipped (BENCH_LITELLM=0)")
    if WITH_LITELLM:
        litellm_child, litellm_url, note = start_litellm(procs, tmp, mock_url)
    report["litellm"] = {"note": note}
    chat_direct = Target(
        "direct", "127.0.0.1", mock_port, "/v1/chat/completions", {"Authorization": "Bearer sk-bench"}
    )
    chat_gateway = Target("gateway", "127.0.0.1", gateway.port, "/v1/chat/completions", member_auth)
    chat = {"direct": chat_direct, "gateway": chat_gateway}
    if litellm_child is not None:
        chat["litellm"] = Target(
            "litellm",
            "127.0.0.1",
            int(litellm_url.rsplit(":", 1)[1]),
            "/v1/chat/completions",
            {"Authorization": f"Bearer {LITELLM_KEY}"},
        )
    chat_plain = {name: chat_body(stream=False) for name in chat}
    chat_stream = {name: chat_body(stream=True) for name in chat}
    log("S1/S2 Chat Completions: direct, gateway" + (", litellm" if "litellm" in chat else " (no litellm)"))
    report["scenarios"]["S1_chat"] = {
        "non_streaming": await s1_latency(chat, chat_plain, streaming=False, rounds=max(4, rounds // 2)),
        "streaming_ttft": await s1_latency(chat, chat_stream, streaming=True, rounds=max(4, rounds // 2)),
    }
    chat_levels = [1, 4, 16, 64] if QUICK else [1, 4, 16, 64, 256]
    report["scenarios"]["S2_chat"] = await s2_sweep(chat, chat_plain, chat_levels, seconds)
    if litellm_child is not None:
        report["litellm"]["rss_mb"] = rss_mb(litellm_child.pid)
        procs.stop(litellm_child)

    report["load"].append(("after S1/S2 chat", loadavg()))
    log("S4 paced streams (64 deltas every 20 ms)")
    s4_levels = [1, 100, 300, 500] if QUICK else [1, 50, 100, 200, 300, 400, 500]
    report["scenarios"]["S4"] = await s4_paced(both, s4_levels, deltas=64, pacing_ms=20)

    report["load"].append(("after S4", loadavg()))
    log("S7 cancellation")
    report["scenarios"]["S7"] = await s7_cancel(
        gateway, mock_url, gateway_url, account_id, trials=3 if QUICK else 8
    )
    log(f"  S7 {report['scenarios']['S7']}")

    soak = 30.0 if QUICK else 180.0
    log(f"S6 memory: idle, then 100 paced streams for {soak:.0f} s")
    cpu_before = cpu_seconds(gateway_proc.pid)
    report["scenarios"]["S6"] = await s6_memory(gateway, gateway_proc.pid, 100, soak, deltas=64, pacing_ms=20)
    report["scenarios"]["S6"]["gateway_cpu_share_of_core"] = round(
        (cpu_seconds(gateway_proc.pid) - cpu_before) / soak, 2
    )
    report["load"].append(("after S6", loadavg()))
    s6 = report["scenarios"]["S6"]
    log(f"  S6 idle {s6['idle_rss_mb']} MB, growth {s6['growth_mb_per_min_after_30s']} MB/min")


def _abs(value: float | None) -> float | None:
    return None if value is None else abs(value)


def loadavg() -> str:
    """``/proc/loadavg`` (other work on the machine shows here)."""
    with contextlib.suppress(OSError):
        return Path("/proc/loadavg").read_text().strip()
    return ""


def verdict(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets against this run."""
    sc = report["scenarios"]
    s1n = sc["S1"]["non_streaming"]["gateway_vs_direct"]
    s1s = sc["S1"]["streaming_ttft"]["gateway_vs_direct"]
    out: dict[str, Any] = {
        "added_p50_nonstreaming_le_1_5ms": {
            "value_ms": s1n["p50_ms"]["difference"],
            "met": (s1n["p50_ms"]["difference"] or 99) <= 1.5,
        },
        "added_ttft_p50_le_2ms": {
            "value_ms": s1s["p50_ms"]["difference"],
            "met": (s1s["p50_ms"]["difference"] or 99) <= 2.0,
        },
        "zero_loss_streams_ge_300": {
            "value": sc["S4"]["highest_zero_loss"]["gateway"],
            "met": sc["S4"]["highest_zero_loss"]["gateway"] >= 300,
        },
        "idle_rss_le_120mb": {"value_mb": sc["S6"]["idle_rss_mb"], "met": sc["S6"]["idle_rss_mb"] <= 120},
        "no_growth_over_soak": {
            "value_mb_per_min": sc["S6"]["growth_mb_per_min_after_30s"],
            "met": sc["S6"]["growth_mb_per_min_after_30s"] <= 1.0,
        },
        "cancel_within_100ms_and_lease_released": {
            "value_ms": sc["S7"]["upstream_cancelled_after_max_ms"],
            "met": sc["S7"]["lease_released"] and sc["S7"]["cancelled_within_100ms"] == sc["S7"]["trials"],
        },
    }
    chat = sc["S1_chat"]
    if "litellm_vs_direct" in chat["non_streaming"]:
        figures = {
            "s1_p50": (
                chat["non_streaming"]["sides"]["gateway"]["p50_ms"],
                chat["non_streaming"]["sides"]["litellm"]["p50_ms"],
            ),
            "s1_p99": (
                chat["non_streaming"]["sides"]["gateway"]["p99_ms"],
                chat["non_streaming"]["sides"]["litellm"]["p99_ms"],
            ),
            "s1_ttft_p50": (
                chat["streaming_ttft"]["sides"]["gateway"]["p50_ms"],
                chat["streaming_ttft"]["sides"]["litellm"]["p50_ms"],
            ),
            "s1_ttft_p99": (
                chat["streaming_ttft"]["sides"]["gateway"]["p99_ms"],
                chat["streaming_ttft"]["sides"]["litellm"]["p99_ms"],
            ),
        }
        s2 = sc["S2_chat"]["summary"]
        for budget in (10, 50, 100):
            key = f"rps_at_p99_le_{budget}ms"
            figures[f"s2_{key}"] = (-s2["gateway"][key], -s2["litellm"][key])  # higher is better
        out["better_than_litellm_everywhere"] = {
            "figures": {
                k: {
                    "gateway": _abs(g),
                    "litellm": _abs(v),
                    "better": g is not None and v is not None and g < v,
                }
                for k, (g, v) in figures.items()
            },
            "met": all(g is not None and v is not None and g < v for g, v in figures.values()),
        }
    else:
        out["better_than_litellm_everywhere"] = {"met": None, "note": report["litellm"]["note"]}
    return out


def main() -> None:
    """Run every scenario; write the JSON; always stop every child process."""
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    began = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(began))
    report: dict[str, Any] = {
        "started_utc": stamp,
        "environment": environment(),
        "config": {
            "quick": QUICK,
            "command": "make bench"
            + (" (BENCH_QUICK=1)" if QUICK else "")
            + (" (BENCH_ONLY=S1)" if ONLY_S1 else ""),
            "gateway": f"sublane serve (uvicorn, httptools, uvloop, 1 worker) on core {GATEWAY_CORE}",
            "mock": f"bench/mock.py (uvicorn, httptools, uvloop) on core {DRIVER_CORE}",
            "driver": f"bench/driver.py (asyncio on uvloop, raw HTTP/1.1) on core {DRIVER_CORE}",
            "litellm": f"litellm proxy, 1 worker, on core {GATEWAY_CORE}, in {LITELLM_VENV}",
            "history_recording": "on; S1_features also runs a gateway with it off (bench/serve_variant.py)",
            "quota_signals": "on; S1_features also asks the mock for no x-codex-* rate-limit headers",
            "metrics": "on; S1_features also runs a gateway with SUBLANE_METRICS_ENABLED=false",
            "team_controls": "usage summaries on and the bench member has two token budgets; S1_features "
            "also runs a gateway with SUBLANE_USAGE_ENABLED=false and no budgets (team_off)",
        },
        "scenarios": {},
        "load": [("start", loadavg())],
    }
    procs = Processes()
    failure = None
    with workdir() as tmp:
        try:
            uvloop.run(scenarios(procs, tmp, report))
        except Exception as exc:  # a partial report is still worth writing
            failure = f"{type(exc).__name__}: {exc}"
            log(f"FAILED: {failure}")
            for name in ("gateway.log", "mock.log"):
                with contextlib.suppress(OSError):
                    log(f"{name} tail:\n" + (tmp / name).read_text(errors="replace")[-3000:])
        finally:
            procs.stop_all()
    report["duration_s"] = round(time.time() - began, 1)
    report["failure"] = failure
    if failure is None and not ONLY_S1:
        report["verdict"] = verdict(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{stamp}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    shutil.copyfile(path, RESULTS / ("latest-s1.json" if ONLY_S1 else "latest.json"))
    log(f"wrote {path} in {report['duration_s']} s")
    if failure:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
