"""A webhook receiver process for the alert tests (ALERT-3/4), and the helpers that run it.

It checks each delivery's signature with the secret it was given, holds the first ``--silent``
requests unanswered past the sender's timeout, answers 500 to the next ``--fail`` ones, takes
``--delay`` seconds over each answer (a slow receiver), and writes one JSON line per request it
received to ``--log``."""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@contextmanager
def receiver(
    port: int, secret: str, log: Path, fail: int = 0, silent: int = 0, delay_s: float = 0.0
) -> Iterator[None]:
    """Run a receiver on ``port`` until the block ends."""
    options = ["--port", str(port), "--secret", secret, "--log", str(log), "--fail", str(fail)]
    options += ["--delay", str(delay_s)]
    process = subprocess.Popen([sys.executable, str(Path(__file__)), *options, "--silent", str(silent)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the receiver did not start"
                time.sleep(0.05)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def received(log: Path, count: int, timeout_s: float = 15.0) -> list[dict[str, Any]]:
    """What the receiver logged, once it holds ``count`` requests (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail", type=int, default=0)
    parser.add_argument("--silent", type=int, default=0, help="hold the first N requests 12 s, unanswered")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args()
    seen = {"requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            timestamp = self.headers.get("x-sublane-timestamp", "")
            expected = hmac.new(
                args.secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
            ).hexdigest()
            valid = hmac.compare_digest(self.headers.get("x-sublane-signature", ""), f"sha256={expected}")
            seen["requests"] += 1
            held = seen["requests"] <= args.silent
            status = 500 if seen["requests"] - args.silent <= args.fail else 200
            record = {
                "delivery": self.headers.get("x-sublane-delivery"),
                "event": self.headers.get("x-sublane-event"),
                "content_type": self.headers.get("content-type"),
                "valid": valid,
                "answered": None if held else status,
                "body": json.loads(body),
            }
            with open(args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            if held:
                time.sleep(12)  # past the sender's 10 s timeout: it has given up by now
                self.close_connection = True
                return
            time.sleep(args.delay)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
