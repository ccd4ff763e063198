"""CONNECT-2: the set-up text and one-call ``try`` per client, from the templates in ``templates/``.

A template is data (one TOML file per client: ``title``, ``order``, ``models``, ``setup``, ``try``);
this module only fills in ``{{url}}`` (the URL clients reach SubLane at) and ``{{model}}`` (a model
the key's group serves). The texts read the key from the shell variable ``SUBLANE_API_KEY`` and never
hold it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

#: What a URL or model may hold to be put into shell text and config files as it is: no quote,
#: space, ``$`` or backslash can reach the shell.
_SAFE_URL = re.compile(r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
_SAFE_PATH = re.compile(r"(/[A-Za-z0-9._~\-]+)*")
_SAFE_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-:()/]{0,127}")


class ConnectError(ValueError):
    """An unknown client, or a URL or model that cannot be written into shell text safely."""


@dataclass(frozen=True)
class ClientTemplate:
    """One client's template, as read from its TOML file."""

    client: str
    title: str
    order: int
    models: tuple[str, ...]
    setup: str
    try_: str

    def choose_model(self, served: Iterable[str]) -> str:
        """The first of ``models`` the group serves (an entry ending in ``-`` takes the first served
        model it begins), else any served model, else the client's own first choice."""
        listed = sorted(model for model in served if _SAFE_MODEL.fullmatch(model))
        for wanted in self.models:
            if wanted.endswith("-"):
                found = next((model for model in listed if model.startswith(wanted)), None)
                if found is not None:
                    return found
            elif wanted in listed:
                return wanted
        return listed[0] if listed else self.models[0]

    def render(self, url: str, model: str) -> dict[str, str]:
        """``{"client","title","setup","try"}`` for SubLane at ``url`` and ``model``."""
        url = check_url(url)
        if not _SAFE_MODEL.fullmatch(model):
            raise ConnectError(f"the model name {model!r} cannot be written into a command")
        return {
            "client": self.client,
            "title": self.title,
            "setup": _fill(self.setup, url, model),
            "try": _fill(self.try_, url, model),
        }


def _fill(text: str, url: str, model: str) -> str:
    # no trailing newline: the texts are pasted as "$setup; $try"
    return text.replace("{{url}}", url).replace("{{model}}", model).strip()


def check_url(url: str) -> str:
    """``url`` without a trailing ``/``, if it is an http(s) URL made only of characters that are
    safe in shell text; else :class:`ConnectError`."""
    url = url.strip().rstrip("/")
    origin = _SAFE_URL.match(url)
    if origin is None or not _SAFE_PATH.fullmatch(url[origin.end() :]):
        raise ConnectError(f"not a plain http(s) URL: {url!r}")
    return url


@cache
def templates() -> dict[str, ClientTemplate]:
    """Every client's template by its name (the file name), in the order the web shows them."""
    found = []
    for entry in resources.files(__package__).joinpath("templates").iterdir():
        if not entry.name.endswith(".toml"):
            continue
        data = tomllib.loads(entry.read_text(encoding="utf-8"))
        found.append(
            ClientTemplate(
                client=entry.name.removesuffix(".toml"),
                title=data["title"],
                order=int(data["order"]),
                models=tuple(data["models"]),
                setup=data["setup"],
                try_=data["try"],
            )
        )
    return {template.client: template for template in sorted(found, key=lambda t: t.order)}


def template(client: str) -> ClientTemplate:
    """The template of ``client``; :class:`ConnectError` naming the known clients otherwise."""
    known = templates()
    if client not in known:
        raise ConnectError(f"unknown client {client!r}; one of: {', '.join(known)}")
    return known[client]


def connect_text(client: str, url: str, served: Collection[str] = ()) -> dict[str, str]:
    """CONNECT-2's answer for ``client`` at ``url``, its model chosen among ``served``."""
    chosen = template(client)
    return chosen.render(url, chosen.choose_model(served))
