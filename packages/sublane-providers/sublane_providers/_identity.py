"""Client identities (CLIENT-1, CLIENT-2): who SubLane says it is to an upstream.

Every upstream call carries a client identity its provider accepts: the identity headers of the
provider's own client (the Codex CLI, Claude Code, the Antigravity client). What those headers are,
how a client's version is read from them and what SubLane's own identity looks like at a given
version is provider knowledge, so each provider package implements :class:`ClientIdentity`
(usually on :class:`VersionedIdentity`) and offers it through the ``HasClientIdentity`` capability.

The gateway decides *whose* identity a call carries (the client's, on a native call from a client at
or above the effective version; SubLane's otherwise) and tells every identity the provider's
effective version (:meth:`ClientIdentity.use`); metadata calls (refresh, quota, discovery, sign-in)
read it from there.

Versions are strict ``MAJOR.MINOR.PATCH`` (no leading zeros, at most five digits a part): anything
else a client claims is no usable identity.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = [
    "ClientIdentity",
    "VersionedIdentity",
    "newest_version",
    "parse_version",
    "plausible_version",
    "version_below",
]

_VERSION = re.compile(r"(0|[1-9][0-9]{0,4})\.(0|[1-9][0-9]{0,4})\.(0|[1-9][0-9]{0,4})")
#: A version found inside a longer text (a user agent, an error message).
VERSION_IN_TEXT = re.compile(
    r"(?<![0-9.])((?:0|[1-9][0-9]{0,4})\.(?:0|[1-9][0-9]{0,4})\.(?:0|[1-9][0-9]{0,4}))(?![0-9.])"
)

Version = tuple[int, int, int]


def parse_version(text: object) -> Version | None:
    """``(major, minor, patch)`` of a well-formed version; ``None`` for anything else."""
    if not isinstance(text, str) or len(text) > 17:
        return None
    match = _VERSION.fullmatch(text)
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3])


def version_below(version: str, floor: str) -> bool:
    """Whether ``version`` is lower than ``floor`` (both well-formed; a malformed one is lowest)."""
    return (parse_version(version) or (-1, 0, 0)) < (parse_version(floor) or (-1, 0, 0))


def newest_version(*versions: str | None) -> str | None:
    """The highest well-formed version given, or ``None``."""
    best: tuple[Version, str] | None = None
    for text in versions:
        parsed = parse_version(text)
        if parsed is not None and text is not None and (best is None or parsed > best[0]):
            best = (parsed, text)
    return best[1] if best is not None else None


def plausible_version(version: str, built_in: str) -> bool:
    """Whether a client's claimed version may count as *seen* (CLIENT-2): well-formed and at most
    one major release past the built-in one, so a key holder cannot push the effective version to
    an absurd value (it only counts after the upstream accepted it, too)."""
    claimed, ours = parse_version(version), parse_version(built_in)
    return claimed is not None and ours is not None and claimed[0] <= ours[0] + 1


@runtime_checkable
class ClientIdentity(Protocol):
    """One provider's client identity (CLIENT-1), owned by the provider's package."""

    @property
    def built_in(self) -> str:
        """The client version this release of the provider knows (the newest client tested)."""
        ...

    @property
    def effective(self) -> str:
        """The provider's effective version (CLIENT-2), as the gateway last told it."""
        ...

    def use(self, version: str) -> None:
        """Take ``version`` as the effective version (the gateway calls this; well-formed only)."""
        ...

    def client_version(self, headers: Mapping[str, str]) -> str | None:
        """The well-formed version of the provider's own client in ``headers`` (lower-case names),
        or ``None`` when they hold no usable identity of that client."""
        ...

    def headers(self, version: str | None = None) -> dict[str, str]:
        """SubLane's identity headers at ``version`` (default: the effective version)."""
        ...

    def replaced(self, headers: Mapping[str, str], version: str | None = None) -> dict[str, str]:
        """``headers`` with whatever identity they carry replaced by SubLane's at ``version``."""
        ...

    def model_floor(self, model: str) -> str | None:
        """The lowest client version the provider's catalogue said ``model`` needs, if it said one."""
        ...


class VersionedIdentity(ABC):
    """The common part of a :class:`ClientIdentity`: the effective version, catalogue floors and
    the replacement of a client's identity headers. A provider says which headers are its client's
    identity (:meth:`owns`), how a version is read from them and what SubLane's identity is."""

    def __init__(self, built_in: str) -> None:
        if parse_version(built_in) is None:
            raise ValueError(f"not a client version: {built_in!r}")
        self._built_in = built_in
        self._effective = built_in
        self._floors: dict[str, str] = {}

    @property
    def built_in(self) -> str:
        return self._built_in

    @property
    def effective(self) -> str:
        return self._effective

    def use(self, version: str) -> None:
        if parse_version(version) is None:
            raise ValueError(f"not a client version: {version!r}")
        self._effective = version

    @abstractmethod
    def owns(self, name: str) -> bool:
        """Whether a (lower-case) header name is part of the client identity."""

    @abstractmethod
    def client_version(self, headers: Mapping[str, str]) -> str | None: ...

    @abstractmethod
    def headers(self, version: str | None = None) -> dict[str, str]: ...

    def replaced(self, headers: Mapping[str, str], version: str | None = None) -> dict[str, str]:
        kept = {name: value for name, value in headers.items() if not self.owns(name.lower())}
        kept.update(self.headers(version))
        return kept

    # -- catalogue floors ---------------------------------------------------------------------------

    def note_floors(self, floors: Mapping[str, str]) -> None:
        """Remember the floors a model list named (well-formed ones; a model listed without one has none)."""
        for model, floor in floors.items():
            if parse_version(floor) is not None:
                self._floors[model] = floor
            else:
                self._floors.pop(model, None)

    def model_floor(self, model: str) -> str | None:
        return self._floors.get(model)
