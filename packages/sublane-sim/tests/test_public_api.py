"""The package's public surface changes only on purpose."""

from __future__ import annotations

import ast
from pathlib import Path

import sublane_sim

PACKAGE = Path(sublane_sim.__file__).parent


def test_public_names_snapshot() -> None:
    assert sublane_sim.__all__ == [
        "SimClock",
        "Simulator",
        "PROVIDERS",
        "Account",
        "Provider",
        "SimAccount",
        "decode_jwt_payload",
        "encode_unsigned_jwt",
        "pkce_s256",
        "Behaviour",
        "BehaviourKind",
        "CutMode",
        "RefreshKind",
        "RefreshOutcome",
        "QuotaReadKind",
        "QuotaReadOutcome",
        "AccountCounters",
        "RequestRecord",
        "SseEvent",
        "parse_sse",
    ]
    for name in sublane_sim.__all__:
        assert hasattr(sublane_sim, name)


def test_independent_of_other_sublane_packages() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                assert not (name.startswith("sublane") and not name.startswith("sublane_sim")), (path, name)


def test_implementation_modules_are_private() -> None:
    public = {p.name for p in PACKAGE.glob("*.py") if not p.name.startswith("_")}
    assert public == {"pytest_plugin.py"}
    assert (PACKAGE / "py.typed").exists()
