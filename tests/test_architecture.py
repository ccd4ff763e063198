"""The architecture's rules, checked on the source of every package (issue #31).

Each rule parses every production module (``packages/*/sublane_*/`` and ``apps/gateway/``; tests and
benchmarks are not held to them) and fails with ``file:line`` for each place that breaks it:

- **libraries through their public seams** — for httpx, Starlette, uvicorn and websockets: no import of a
  private module (a dotted path with a ``_``-named part), no class of ours built on a class of
  theirs that is not in their public modules, no ``__new__`` called on one of their types or on a
  class of ours built on one, and no read or write of an attribute their own source names as
  private (``_list``, ``_content``, ``_body``…, found by parsing the installed library: what
  ``self._x`` assigns or a class body defines), unless the module defines that name itself; and
  no subclass of uvicorn's connection protocols (the server is configured, or its protocol held);
- **one pipeline**: the scheduler's entry points (``Scheduler.route``/``acquire``, the pipeline's
  ``schedule``) are called from ``sublane_gateway/pipeline/`` only;
- **no provider named outside its distribution**: outside ``sublane_provider_<name>``, no code
  names a provider: no string that is or holds a provider's name as a word, no identifier with one
  as a word part (``CODEX_RULES``, ``claudeIdentity``), no import of a provider distribution, and
  no such word in the web views' scripts (comments aside). The names are the installed entry points'
  (``sublane.providers``), so a new provider is covered without touching this file. Docstrings and
  comments are prose. Two kinds of place are not held to it, on purpose: ``sublane_sim``, the
  stand-in for the real upstreams (a test tool, not SubLane), and the header names real *clients*
  send (``x-codex-turn-metadata`` of the Codex CLI, ``x-claude-code-session-id`` of Claude Code),
  their client protocol's vocabulary, listed in ``CLIENT_HEADERS`` below. Inside a provider's
  distribution, the model ids it serves may hold another provider's name as a word (Antigravity
  serves ``claude-sonnet-4-6``): there only another provider's bare name counts in a string.

Each checker also runs on small synthetic sources, with and without a violation.
"""

from __future__ import annotations

import ast
import importlib
import re
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[1]
LIBRARIES = ("httpx", "starlette", "uvicorn", "websockets")
# The server's connection protocols: configured (``http=``, ``ws=``) or held, never subclassed.
SERVER_INTERNALS = ("uvicorn.protocols.",)
SCHEDULER_ENTRY_POINTS = frozenset({"route", "acquire"})
PIPELINE = "apps/gateway/sublane_gateway/pipeline/"


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def production_roots() -> list[Path]:
    """Every package's source folder: ``packages/*/sublane_*``, the provider distributions under
    ``packages/sublane-providers/*/``, and the gateway."""
    return [
        *sorted((_REPO / "packages").glob("*/sublane_*")),
        *sorted((_REPO / "packages" / "sublane-providers").glob("*/sublane_provider_*")),
        _REPO / "apps" / "gateway" / "sublane_gateway",
    ]


def production_modules() -> list[Path]:
    roots = production_roots()
    return [
        path
        for root in roots
        for path in sorted(root.rglob("*.py"))
        if "__pycache__" not in path.parts and "tests" not in path.relative_to(root).parts
    ]


def _parse(path: Path) -> tuple[ast.Module, str]:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), str(path.relative_to(_REPO))


# -- what the libraries call private ----------------------------------------------------------------


def _is_private_module(module: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


@cache
def library_private_names() -> frozenset[str]:
    """Attribute names the libraries' own classes keep private: ``self._x = …`` and ``_x`` class members."""
    names: set[str] = set()
    for library in LIBRARIES:
        package = importlib.import_module(library)
        for file in Path(package.__path__[0]).rglob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    if isinstance(node.value, ast.Name) and node.value.id == "self":
                        names.add(node.attr)
                elif isinstance(node, ast.ClassDef):
                    for member in node.body:
                        if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                            names.add(member.name)
                        elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                            names.add(member.target.id)
    return frozenset(name for name in names if name.startswith("_") and not name.startswith("__"))


@cache
def public_classes() -> frozenset[str]:
    """``module.Class`` for every class the libraries' public modules offer (no ``_`` in the path)."""
    found: set[str] = set()
    for library in LIBRARIES:
        package = importlib.import_module(library)
        root = Path(package.__path__[0])
        modules = [library]
        for file in root.rglob("*.py"):
            parts = file.relative_to(root).with_suffix("").parts
            name = ".".join((library, *parts)).removesuffix(".__init__")
            if not _is_private_module(name):
                modules.append(name)
        for name in modules:
            try:
                with warnings.catch_warnings():  # deprecated modules warn as they are imported
                    warnings.simplefilter("ignore")
                    module = importlib.import_module(name)
            except ImportError:  # an optional extra not installed: its classes are not ours to use
                continue
            for attribute in getattr(module, "__all__", None) or dir(module):
                value = getattr(module, attribute, None)
                if isinstance(value, type) and not attribute.startswith("_"):
                    found.add(f"{name}.{attribute}")
    return frozenset(found)


# -- rule: libraries through their public seams -------------------------------------------------------


def _library_imports(tree: ast.Module) -> dict[str, str]:
    """Local name → the dotted library path it stands for (``httpx``, ``starlette.requests.Request``)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in LIBRARIES:
                    bound[(alias.asname or alias.name).split(".")[0]] = alias.name.split(".")[0]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and not node.level
            and node.module.split(".")[0] in LIBRARIES
        ):
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(expr: ast.expr, bound: dict[str, str]) -> str | None:
    """The library path an expression names (``httpx.Response`` → ``httpx.Response``), else ``None``."""
    if isinstance(expr, ast.Name):
        return bound.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value, bound)
        return f"{base}.{expr.attr}" if base is not None else None
    return None


def _own_names(tree: ast.Module) -> set[str]:
    """Names our module defines itself (what ``self.x``/``cls.x`` assigns, functions, classes,
    variables): an attribute of ours that a library happens to name too."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}:
                own.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.arg):
            own.add(node.arg)
    return own


def library_seam_violations(
    tree: ast.Module, path: str, own_everywhere: frozenset[str] = frozenset()
) -> list[Violation]:
    bound = _library_imports(tree)
    private = library_private_names() - _own_names(tree)
    found: list[Violation] = []
    built_on_library: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            )
            for module in modules:
                if module.split(".")[0] in LIBRARIES and _is_private_module(module):
                    found.append(Violation(path, node.lineno, f"imports the private module {module}"))
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                dotted = _dotted(base, bound)
                if dotted is None:
                    continue
                built_on_library.add(node.name)
                if dotted.startswith(SERVER_INTERNALS):
                    found.append(
                        Violation(path, node.lineno, f"class {node.name} subclasses the server's {dotted}")
                    )
                elif dotted not in public_classes():
                    found.append(
                        Violation(
                            path, node.lineno, f"class {node.name} is built on {dotted}, not a public class"
                        )
                    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr == "__new__":
                target = node.value
                named = _dotted(target, bound)
                if named is not None or (
                    isinstance(target, ast.Name)
                    and target.id in built_on_library | {"cls"}
                    and built_on_library
                ):
                    found.append(
                        Violation(path, node.lineno, f"calls __new__ on {named or ast.unparse(target)}")
                    )
            elif node.attr in private and not (
                isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}
            ):
                found.append(
                    Violation(
                        path, node.lineno, f"touches {ast.unparse(node)}: private to {'/'.join(LIBRARIES)}"
                    )
                )
    return found


def test_libraries_are_used_through_their_public_seams() -> None:
    violations = [v for path in production_modules() for v in library_seam_violations(*_parse(path))]
    assert not violations, "\n".join(map(str, violations))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import httpx\nh = httpx.Headers()\nh._list = []\n", "touches h._list"),
        ("import httpx\nclass R(httpx.Response):\n    pass\nr = R.__new__(R)\n", "calls __new__ on R"),
        ("import httpx\nr = httpx.Response.__new__(httpx.Response)\n", "calls __new__ on httpx.Response"),
        (
            "from starlette.requests import Request\ndef f(r: Request) -> None:\n    r._body = b''\n",
            "touches r._body",
        ),
        ("from httpx._models import Headers\n", "imports the private module httpx._models"),
        (
            "import websockets.legacy.protocol\nclass P(websockets.legacy.protocol.Nonexistent):\n    pass\n",
            "not a public class",
        ),
        (
            "from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol\n"
            "class P(HttpToolsProtocol):\n    pass\n",
            "subclasses the server's uvicorn.protocols.http.httptools_impl.HttpToolsProtocol",
        ),
    ],
)
def test_the_seam_rule_finds_what_it_forbids(source: str, expected: str) -> None:
    violations = library_seam_violations(ast.parse(textwrap.dedent(source)), "example.py")
    assert any(expected in str(violation) for violation in violations), violations


def test_the_seam_rule_allows_public_use() -> None:
    source = """
        import httpx
        from starlette.responses import Response

        class Mine(Response):
            pass

        class Transport(httpx.AsyncBaseTransport):
            def __init__(self) -> None:
                self._inner = None

        async def get(client: httpx.AsyncClient) -> int:
            response = await client.get("http://x")
            return response.status_code
    """
    assert library_seam_violations(ast.parse(textwrap.dedent(source)), "example.py") == []


# -- rule: one pipeline schedules -------------------------------------------------------------------


def _calls(tree: ast.Module) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def scheduling_violations(tree: ast.Module, path: str) -> list[Violation]:
    if path.startswith(PIPELINE) or "sublane_scheduler/" in path:
        return []
    found: list[Violation] = []
    for call in _calls(tree):
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in SCHEDULER_ENTRY_POINTS:
            if "scheduler" in ast.unparse(func.value).lower():
                found.append(Violation(path, call.lineno, f"calls {ast.unparse(func)} outside the pipeline"))
        elif isinstance(func, ast.Name) and func.id == "schedule":
            found.append(Violation(path, call.lineno, "calls the pipeline's schedule() outside the pipeline"))
    return found


def test_only_the_pipeline_calls_the_schedulers_entry_points() -> None:
    violations = [v for path in production_modules() for v in scheduling_violations(*_parse(path))]
    assert not violations, "\n".join(map(str, violations))


@pytest.mark.parametrize(
    ("source", "path", "broken"),
    [
        (
            "async def f(runtime):\n    await runtime.scheduler.route(r, c)\n",
            "apps/gateway/sublane_gateway/routes/x.py",
            True,
        ),
        (
            "async def f(runtime):\n    await schedule(runtime, p)\n",
            "apps/gateway/sublane_gateway/routes/x.py",
            True,
        ),
        ("async def f(runtime):\n    await runtime.scheduler.route(r, c)\n", PIPELINE + "_x.py", False),
        ("async def f(app):\n    app.add_route('/x', g)\n", "apps/gateway/sublane_gateway/x.py", False),
    ],
)
def test_the_scheduling_rule_finds_what_it_forbids(source: str, path: str, broken: bool) -> None:
    assert bool(scheduling_violations(ast.parse(source), path)) is broken


# -- rule: no provider named outside its distribution -------------------------------------------------

#: Header names real clients send: their client protocol's words, not provider names.
CLIENT_HEADERS = frozenset({"x-codex-turn-metadata", "x-codex-parent-thread-id", "x-claude-code-session-id"})
#: Paths real clients call on their own (CLIENT-5: the Codex CLI's usage read): their words too.
CLIENT_PATHS = frozenset({"/api/codex/usage"})
#: Not held to the rule: the upstream simulator (it stands in for the providers' upstreams).
NOT_HELD = ("packages/sublane-sim/",)
#: Provider names that are also the vendor of client protocols every provider serves (the ``openai``
#: provider, PAID-1, and the OpenAI Responses and Chat Completions protocols): for them only a bare
#: mention counts — the name as a whole string or a whole identifier, or its distribution's module —
#: since ``openai_error_body``, ``x-openai-subagent`` or "OpenAI Responses" name a protocol.
PROTOCOL_VENDORS = frozenset({"openai"})


def _bare(text: str, vendors: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(lowered in (name, f"sublane_provider_{name}") for name in vendors)


def _provider_names() -> tuple[str, ...]:
    from sublane_providers import provider_names

    names = provider_names()
    assert len(names) >= 3, f"the installed entry points name only {names}"
    return names


def _word_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """A provider's name as a word: not inside a longer word (``codexes``), split at ``_``, ``-``,
    ``.``, ``/``, spaces and a camel-case hump (``claudeIdentity``)."""
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"(?:(?<=[^A-Za-z])|(?<=[a-z])(?=[A-Z])|^)(?i:{alternatives})(?=[^a-z]|$)")


def _docstring_ids(tree: ast.Module) -> set[int]:
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _identifiers(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
        yield node.arg
    elif isinstance(node, ast.alias):
        yield node.asname or node.name
    elif isinstance(node, ast.ImportFrom) and node.module:
        yield node.module


def provider_name_violations(tree: ast.Module, path: str, names: tuple[str, ...]) -> list[Violation]:
    """Strings and identifiers naming a provider, outside that provider's own distribution."""
    if path.startswith(NOT_HELD):
        return []
    own = re.search(r"sublane_provider_([a-z0-9_]+)/", path)
    held = tuple(name for name in names if own is None or own.group(1) != name)
    if not held:
        return []
    vendors = tuple(name for name in held if name in PROTOCOL_VENDORS)
    strict = tuple(name for name in held if name not in PROTOCOL_VENDORS)
    word = _word_pattern(strict) if strict else re.compile(r"(?!)")
    docstrings = _docstring_ids(tree)
    found: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings or node.value.lower() in CLIENT_HEADERS | CLIENT_PATHS:
                continue
            # A provider may serve models of another's family (``claude-sonnet-4-6`` on Antigravity):
            # in a provider's distribution only the bare name of another provider counts.
            named = (node.value.lower() in held) if own is not None else word.search(node.value)
            if named or _bare(node.value, vendors):
                found.append(Violation(path, node.lineno, f"names a provider in {node.value[:60]!r}"))
        else:
            for identifier in _identifiers(node):
                if word.search(identifier.replace("_", " ").replace(".", " ")) or _bare(identifier, vendors):
                    line = getattr(node, "lineno", 0)
                    found.append(Violation(path, line, f"names a provider in the identifier {identifier}"))
    return found


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"(?:^|(?<=\s))//.*$", re.M)


def script_violations(source: str, path: str, names: tuple[str, ...]) -> list[Violation]:
    """A web view's script (JavaScript) naming a provider outside its comments."""
    word = _word_pattern(names)
    code = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source))
    return [
        Violation(path, number, f"names a provider: {line.strip()[:60]}")
        for number, line in enumerate(code.splitlines(), 1)
        if word.search(line)
    ]


def test_no_provider_is_named_outside_its_distribution() -> None:
    names = _provider_names()
    violations = [
        violation
        for path in production_modules()
        for violation in provider_name_violations(*_parse(path), names)
    ]
    scripts = sorted((_REPO / "packages" / "sublane-web" / "sublane_web").rglob("*.js"))
    assert len(scripts) >= 3, scripts
    for script in scripts:
        violations += script_violations(
            script.read_text(encoding="utf-8"), str(script.relative_to(_REPO)), names
        )
    assert not violations, "\n".join(map(str, violations))


NAMES = ("codex", "claude", "antigravity")
CORE = "packages/sublane-core/sublane_core/x.py"


@pytest.mark.parametrize(
    "source",
    [
        "if provider == 'codex':\n    pass",
        "adapter = adapters['claude']",
        "URL = 'https://claude.ai/oauth/authorize'",
        "_CODEX_REJECTED_FIELDS = ('stop',)",
        "def claude_identity() -> str:\n    return ''",
        "class AntigravityWrapper:\n    pass",
        "settings.codex_base_url",
        "from sublane_provider_codex import PROVIDER",
        "import importlib\nimportlib.import_module('sublane_provider_claude')",
        "def f(codex: int) -> None:\n    pass",
        "label = 'Claude Code identity'",
        "claudeIdentity = 1",
    ],
)
def test_the_provider_name_rule_finds_what_it_forbids(source: str) -> None:
    assert provider_name_violations(ast.parse(source), CORE, NAMES), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Served by codex and claude accounts."""',
        "def f():\n    'Reads claude answers.'\n    return 1",
        "provider = account.provider",
        "name = 'codexes'",
        "HEADER = 'x-codex-turn-metadata'",
        "session = headers.get('x-claude-code-session-id')",
        "excluded = 'anticlaudean'",
    ],
)
def test_the_provider_name_rule_allows_prose_client_headers_and_other_words(source: str) -> None:
    assert provider_name_violations(ast.parse(source), CORE, NAMES) == []


def test_a_provider_may_name_itself_but_not_another() -> None:
    source = "NAME = 'codex'\nOTHER = 'claude'\n"
    own = "packages/sublane-providers/codex/sublane_provider_codex/_x.py"
    assert [v.line for v in provider_name_violations(ast.parse(source), own, NAMES)] == [2]
    served = "MODELS = ('claude-sonnet-4-6',)\nclaude_models = 1\n"  # its models may; its names may not
    assert [v.line for v in provider_name_violations(ast.parse(served), own, NAMES)] == [2]
    assert provider_name_violations(ast.parse(source), "packages/sublane-sim/sublane_sim/_x.py", NAMES) == []


def test_the_script_rule_reads_code_not_comments() -> None:
    source = (
        "// an Antigravity account's subject\n"
        "/** Codex and\n * Claude */\n"
        "const url = 'https://example.org/x';\n"
        'if (account.provider === "antigravity") {}\n'
    )
    assert [v.line for v in script_violations(source, "x.js", NAMES)] == [5]


VENDOR_NAMES = (*NAMES, "openai")


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("if provider == 'openai':\n    pass", True),
        ("adapter = adapters['OpenAI']", True),
        ("from sublane_provider_openai import PROVIDER", True),
        ("def f(openai: int) -> None:\n    pass", True),
        ("settings.codex_base_url", True),  # the other names keep the whole rule
        ("def openai_error_body() -> None:\n    pass", False),
        ("HEADER = 'x-openai-subagent'", False),
        ("LABEL = 'client: OpenAI Responses'", False),
    ],
)
def test_paid_1_a_protocol_vendors_name_counts_only_bare(source: str, named: bool) -> None:
    """``openai`` is a provider (PAID-1) and the vendor of protocols every provider serves."""
    assert bool(provider_name_violations(ast.parse(source), CORE, VENDOR_NAMES)) is named, source
