"""Conventions of the gateway's source that review alone used to uphold.

The gateway talks to every provider through the registry and the ``ProviderAdapter`` interface of
``sublane_providers``; it never knows which providers exist. Each test here parses every module of
``sublane_gateway`` (the source, not the imported objects, so a lazy import or a dead branch counts
too) and fails with ``file:line`` for each place that breaks one of these rules:

- it imports a provider distribution (``sublane_provider_codex`` and the like: the packages named
  by the installed ``sublane.providers`` entry points, so a new provider is covered without touching
  this file); the registry of ``sublane_providers`` is how the gateway is meant to reach them;
- it downcasts an adapter: ``isinstance``/``issubclass`` against a class whose name ends in
  ``Adapter``, ``type(x) is SomeAdapter``, or a ``case SomeAdapter():`` pattern;
- it names a provider: a string constant exactly equal to one of ``provider_names()`` (``"codex"``
  in ``provider == "codex"``, ``adapters["claude"]``, ``("codex",)``). Docstrings are prose and do
  not count; a constant that only starts with a name followed by ``/``, ``.`` or ``_`` (an event
  such as ``"codex.rate_limits"``) is not a provider name.

Each checker also runs on small synthetic sources, with and without a violation, so these tests can
be seen to fail, and not only to pass.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from sublane_providers import ENTRY_POINT_GROUP, provider_names

_REPO = Path(__file__).resolve().parents[3]
GATEWAY_SOURCE = _REPO / "apps" / "gateway" / "sublane_gateway"


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


Checker = Callable[[ast.Module, str], list[Violation]]


# -- what the rules are about ---------------------------------------------------------------------


def provider_packages() -> frozenset[str]:
    """The top-level packages of the installed provider distributions (their entry points' modules)."""
    return frozenset(
        entry.value.split(":")[0].split(".")[0] for entry in entry_points(group=ENTRY_POINT_GROUP)
    )


def gateway_modules() -> list[Path]:
    return sorted(path for path in GATEWAY_SOURCE.rglob("*.py") if "__pycache__" not in path.parts)


def _parse(path: Path) -> tuple[ast.Module, str]:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), str(path.relative_to(_REPO))


# -- rule (a): no provider subpackage ---------------------------------------------------------------


def provider_subpackage_imports(tree: ast.Module, path: str, packages: Iterable[str]) -> list[Violation]:
    """``import x``, ``from x… import`` and ``importlib.import_module("x…")`` for each provider
    package ``x``."""
    forbidden = set(packages)

    def names_a_subpackage(module: str) -> bool:
        return any(module == sub or module.startswith(f"{sub}.") for sub in forbidden)

    found: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Call):
            for module in _imported_modules(node):
                if names_a_subpackage(module):
                    found.append(Violation(path, node.lineno, f"imports the provider package {module}"))
    return found


def _imported_modules(node: ast.Import | ast.ImportFrom | ast.Call) -> list[str]:
    """The modules an import statement, or an ``import_module``/``__import__`` call, brings in."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level or not node.module:
            return []
        return [node.module]
    if (
        _called_name(node.func) in {"import_module", "__import__"}
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [node.args[0].value]
    return []


# -- rule (b): no adapter downcast ------------------------------------------------------------------


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _adapter_classes(expr: ast.expr) -> Iterator[str]:
    """The names ending in ``Adapter`` in a class expression: ``A``, ``mod.A``, ``(A, B)``, ``A | B``."""
    if isinstance(expr, ast.Name | ast.Attribute):
        name = _called_name(expr)
        if name is not None and name.endswith("Adapter"):
            yield name
    elif isinstance(expr, ast.Tuple | ast.List | ast.Set):
        for element in expr.elts:
            yield from _adapter_classes(element)
    elif isinstance(expr, ast.Starred):
        yield from _adapter_classes(expr.value)
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
        yield from _adapter_classes(expr.left)
        yield from _adapter_classes(expr.right)


def _is_type_call(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "type"


def adapter_downcasts(tree: ast.Module, path: str) -> list[Violation]:
    found: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node.func) in {"isinstance", "issubclass"}:
            if len(node.args) >= 2:
                for name in _adapter_classes(node.args[1]):
                    found.append(Violation(path, node.lineno, f"{_called_name(node.func)}(…, {name})"))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_type_call(operand) for operand in operands):
                for operand in operands:
                    for name in _adapter_classes(operand):
                        found.append(Violation(path, node.lineno, f"compares type(…) with {name}"))
        elif isinstance(node, ast.MatchClass):
            for name in _adapter_classes(node.cls):
                found.append(Violation(path, node.lineno, f"case {name}(…)"))
    return found


# -- rules (c) and (d): no provider name ------------------------------------------------------------


def _inert_strings(tree: ast.Module) -> set[int]:
    """The ids of docstrings: every string that is a statement on its own (a module, class or function
    docstring, or an attribute docstring after an assignment), which does nothing at run time."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def provider_name_constants(tree: ast.Module, path: str, names: Iterable[str]) -> list[Violation]:
    """String constants exactly equal to a provider name. ``"codex.rate_limits"``, ``"claude/…"`` and
    ``"codex_…"`` are other words, not the name, and pass."""
    providers = set(names)
    docstrings = _inert_strings(tree)
    return [
        Violation(path, node.lineno, f"names the provider {node.value!r}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in providers
        and id(node) not in docstrings
    ]


# -- the rules, over the gateway's source -----------------------------------------------------------


def _check_gateway(checker: Checker) -> list[str]:
    modules = gateway_modules()
    # Floor: a moved folder must fail loudly, not pass for having nothing left to check.
    assert len(modules) > 10, f"found only {modules} under {GATEWAY_SOURCE}"
    violations: list[str] = []
    for module in modules:
        tree, path = _parse(module)
        found = sorted(checker(tree, path), key=lambda violation: violation.line)
        violations += [str(violation) for violation in found]
    return violations


def test_gateway_imports_no_provider_subpackage() -> None:
    """The gateway reaches providers through ``sublane_providers`` and its registry only."""
    packages = provider_packages()
    assert len(packages) >= 2, f"found only {packages} in the entry points {ENTRY_POINT_GROUP!r}"
    violations = _check_gateway(lambda tree, path: provider_subpackage_imports(tree, path, packages))
    assert violations == [], "import these through `sublane_providers` instead:\n" + "\n".join(violations)


def test_gateway_never_downcasts_an_adapter() -> None:
    """What the gateway needs from a provider is on ``ProviderAdapter``; a downcast is a provider
    special case in disguise."""
    violations = _check_gateway(adapter_downcasts)
    assert violations == [], "adapter downcasts:\n" + "\n".join(violations)


def test_gateway_never_names_a_provider() -> None:
    """Provider-specific behaviour belongs to the adapter; the gateway only passes names through.
    A provider named like a client protocol (``gemini``: ``WireProtocol.GEMINI``) is not held here:
    the gateway names the protocol; its package stays unimported (the test above)."""
    from sublane_core import WireProtocol

    protocols = {protocol.value for protocol in WireProtocol}
    names = tuple(name for name in provider_names() if name not in protocols)
    assert len(names) >= 2, names
    violations = _check_gateway(lambda tree, path: provider_name_constants(tree, path, names))
    assert violations == [], "provider names in gateway code:\n" + "\n".join(violations)


# -- the checkers can fail ---------------------------------------------------------------------------

SUBPACKAGES = frozenset({"sublane_provider_codex", "sublane_provider_claude", "sublane_provider_antigravity"})
NAMES = ("codex", "claude", "antigravity")


def _lines(checker: Checker, source: str) -> list[int]:
    tree = ast.parse(textwrap.dedent(source))
    return [violation.line for violation in checker(tree, "synthetic.py")]


def _subpackage_check(tree: ast.Module, path: str) -> list[Violation]:
    return provider_subpackage_imports(tree, path, SUBPACKAGES)


def _name_check(tree: ast.Module, path: str) -> list[Violation]:
    return provider_name_constants(tree, path, NAMES)


@pytest.mark.parametrize(
    "source",
    [
        "from sublane_provider_codex import CodexAdapter",
        "from sublane_provider_claude._quota import windows_from_headers",
        "import sublane_provider_antigravity",
        "import sublane_provider_codex._chat as chat",
        "def lazy():\n    from sublane_provider_codex import KNOWN_MODELS\n",
        "import importlib\nimportlib.import_module('sublane_provider_claude')",
    ],
)
def test_subpackage_check_reports_an_import(source: str) -> None:
    assert _lines(_subpackage_check, source) != []


@pytest.mark.parametrize(
    "source",
    [
        "import sublane_providers",
        "from sublane_providers import ProviderAdapter, provider_names",
        "from sublane_providers.testing import AdapterContract",  # a module, not a subpackage
        "from sublane_providers_extra.codex import x",
        "from sublane_provider_codexes import x",
        "from sublane_core import codex",
    ],
)
def test_subpackage_check_passes_a_clean_import(source: str) -> None:
    assert _lines(_subpackage_check, source) == []


@pytest.mark.parametrize(
    "source",
    [
        "if isinstance(adapter, CodexAdapter):\n    pass",
        "ok = isinstance(adapter, claude.ClaudeAdapter)",
        "ok = isinstance(adapter, (str, CodexAdapter))",
        "ok = isinstance(adapter, int | ClaudeAdapter)",
        "ok = issubclass(type(adapter), CodexAdapter)",
        "ok = type(adapter) is CodexAdapter",
        "match adapter:\n    case ClaudeAdapter():\n        pass",
    ],
)
def test_downcast_check_reports_a_downcast(source: str) -> None:
    assert _lines(adapter_downcasts, source) != []


@pytest.mark.parametrize(
    "source",
    [
        "ok = isinstance(body, dict)",
        "ok = isinstance(adapter, (str, bytes))",
        "adapter: CodexAdapter = registry.get(name)",
        "ok = type(adapter).__name__ == 'CodexAdapter'",
    ],
)
def test_downcast_check_passes_clean_code(source: str) -> None:
    assert _lines(adapter_downcasts, source) == []


@pytest.mark.parametrize(
    "source",
    [
        "if provider == 'codex':\n    pass",
        "adapter = adapters['claude']",
        "WEBSOCKET_PROVIDERS = ('codex',)",
        "def f(provider: str = 'antigravity') -> None:\n    pass",
        "x: Literal['codex', 'claude']",
        "label = f'claude{suffix}'",
        "def f():\n    '''Docstring.'''\n    return {'provider': 'codex'}",
    ],
)
def test_name_check_reports_a_provider_name(source: str) -> None:
    assert _lines(_name_check, source) != []


@pytest.mark.parametrize(
    "source",
    [
        '"""The gateway for codex and claude."""',
        "def f():\n    'Sends claude traffic.'\n    return 1",
        "class A:\n    '''codex'''",
        "LIMIT = 3\n'codex'",  # an attribute docstring: a bare string does nothing
        "EVENT = 'codex.rate_limits'",
        "path = 'claude/v1/messages'",
        "key = 'codex_session'",
        "provider = account.provider",
        "name = 'codexes'",
    ],
)
def test_name_check_passes_clean_code(source: str) -> None:
    assert _lines(_name_check, source) == []


def test_name_check_reports_the_line() -> None:
    source = """\
        '''Module docstring naming codex.'''
        EVENT = "codex.rate_limits"

        def route(provider: str) -> bool:
            return provider == "claude"
        """
    assert _lines(_name_check, source) == [5]
