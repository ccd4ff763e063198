"""A model call through an account's egress proxy, next to a direct one (issue #34, EGRESS-1).

``python bench/egress.py`` starts the mock and ``sublane serve`` as ``bench/cpu.py`` does, and two
real proxies on the driver's core (Debian's ``tinyproxy`` for HTTP ``CONNECT`` and ``microsocks``
for SOCKS5, both with a password). The bench account is switched between direct, the HTTP proxy
and the SOCKS5 proxy (``PATCH /api/accounts/{id}`` ``proxy_url``); for each, closed-loop
non-streaming Responses calls at concurrency 8 for ``BENCH_EGRESS_SECONDS`` (default 10) give the
p50 and the gateway's CPU per request. Keep-alive holds: the pool keeps its tunnels, so a proxy
costs a hop per request, not a handshake. Rounds alternate (direct, http, socks5, direct, …).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import uvloop
from driver import closed_loop
from run import ADMIN, DRIVER_CORE, Processes, cpu_seconds, log, responses_body, start_mock_and_gateway

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from proxy_servers import start_http_proxy, start_socks_proxy  # the tests' real proxies

SECONDS = float(os.environ.get("BENCH_EGRESS_SECONDS", "10"))
ROUNDS = int(os.environ.get("BENCH_EGRESS_ROUNDS", "2"))
CONCURRENCY = int(os.environ.get("BENCH_EGRESS_CONCURRENCY", "8"))


def set_proxy(url: str, proxy: str | None) -> None:
    with httpx.Client(base_url=url, timeout=30) as admin:
        admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}).raise_for_status()
        account = admin.get("/api/accounts").json()["items"][0]["id"]
        admin.patch(f"/api/accounts/{account}", json={"proxy_url": proxy}).raise_for_status()


async def main_async(procs: Processes, tmp: Path) -> dict[str, Any]:
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    url = f"http://{gateway.host}:{gateway.port}"
    os.sched_setaffinity(0, {int(DRIVER_CORE)})  # the proxies start from here: the driver's core
    http = start_http_proxy(tmp / "tinyproxy", "127.0.0.3", "bench", "bench-pw")
    socks = start_socks_proxy(tmp / "microsocks", "127.0.0.2", "bench", "bench-pw")
    raw = gateway.request(responses_body(stream=False))
    out: dict[str, Any] = {"seconds": SECONDS, "concurrency": CONCURRENCY, "load_before": os.getloadavg()}
    try:
        for round_ in range(ROUNDS):
            for label, proxy in (("direct", None), ("http", http.url()), ("socks5", socks.url())):
                log(f"egress bench: round {round_ + 1}, {label}")
                set_proxy(url, proxy)
                await closed_loop(gateway, raw, CONCURRENCY, 2.0)  # warm-up: the new egress's pool
                before = cpu_seconds(gateway_proc.pid)
                result = await closed_loop(gateway, raw, CONCURRENCY, SECONDS)
                spent = cpu_seconds(gateway_proc.pid) - before
                answered = int(result["requests"] or 0)
                out.setdefault(label, []).append(
                    {
                        "requests": answered,
                        "errors": result["errors"],
                        "p50_ms": result["p50_ms"],
                        "p99_ms": result["p99_ms"],
                        "rps": result["rps"],
                        "cpu_ms_per_request": round(spent * 1000 / answered, 3) if answered else None,
                    }
                )
    finally:
        http.stop()
        socks.stop()
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-egress-") as tmp:
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp))), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
