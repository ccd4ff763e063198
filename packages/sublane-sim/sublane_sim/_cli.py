"""`sublane-sim`: run the simulator in the foreground for demos, manual testing and benchmarks."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ._catalog import PROVIDERS
from ._simulator import SimAccount, Simulator

__all__ = ["main"]

_FILE_NAMES = {
    "codex": "auth.json",
    "claude": ".credentials.json",
    "antigravity": "antigravity.json",
    "openai": "openai.json",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sublane-sim",
        description="Loopback simulator of the Codex, Claude and Antigravity upstreams (HTTP + WebSocket).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9090, help="port; 0 picks a free one (default: 9090)")
    parser.add_argument(
        "--seed-accounts", type=int, default=0, metavar="N", help="create N accounts per provider at start-up"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed for ids, secrets and text")
    parser.add_argument(
        "--credentials-dir",
        type=Path,
        default=None,
        help="write each seeded account's credential file to DIR/<account-id>/<file name>",
    )
    parser.add_argument("--quota-cost", type=float, default=0.0, help="percent of quota each request uses")
    return parser


def _write_credentials(directory: Path, account: SimAccount) -> Path:
    folder = directory / account.id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / _FILE_NAMES[account.provider]
    path.write_text(json.dumps(account.credentials, indent=2) + "\n")
    path.chmod(0o600)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sim = Simulator(seed=args.seed)
    created: list[SimAccount] = []
    for provider in PROVIDERS:
        for _ in range(args.seed_accounts):
            created.append(sim.create_account(provider, quota_cost=args.quota_cost))

    def announce(base: str) -> None:
        print(f"sublane-sim listening on {base}")
        for name, value in sim.env().items():
            print(f"export {name}={value}")
        for account in created:
            line = f"account {account.id} provider={account.provider} email={account.email}"
            line += f" api_key={account.api_key}"
            if args.credentials_dir is not None:
                line += f" credentials={_write_credentials(args.credentials_dir, account)}"
            print(line)
        print("control API: GET/POST /_sim/... (see README)", flush=True)

    sim.serve(args.host, args.port, ready=announce)
    return 0


if __name__ == "__main__":
    sys.exit(main())
