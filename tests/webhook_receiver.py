"""A webhook receiver process for the alert tests (ALERT-3/4): it checks each delivery's signature
with the secret it was given, answers 500 to the first ``--fail`` requests, and writes one JSON line
per request it received to ``--log``."""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail", type=int, default=0)
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
            status = 500 if seen["requests"] <= args.fail else 200
            record = {
                "delivery": self.headers.get("x-sublane-delivery"),
                "event": self.headers.get("x-sublane-event"),
                "content_type": self.headers.get("content-type"),
                "valid": valid,
                "answered": status,
                "body": json.loads(body),
            }
            with open(args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
