"""CLIENT-1/2: the kit's version rules and identity base (``sublane_providers._identity``)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from sublane_providers import newest_version, parse_version, plausible_version, version_below
from sublane_providers.kit import VersionedIdentity


class _Identity(VersionedIdentity):
    def owns(self, name: str) -> bool:
        return name in ("user-agent", "x-client")

    def client_version(self, headers: Mapping[str, str]) -> str | None:
        agent = headers.get("user-agent", "")
        return agent.removeprefix("client/") if parse_version(agent.removeprefix("client/")) else None

    def headers(self, version: str | None = None) -> dict[str, str]:
        return {"user-agent": f"client/{version or self.effective}"}


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("0.171.0", (0, 171, 0)),
        ("2.1.332", (2, 1, 332)),
        ("99999.0.1", (99999, 0, 1)),
        ("0.171", None),
        ("v0.171.0", None),
        ("0.171.0-beta", None),
        ("01.2.3", None),
        ("1.2.3.4", None),
        ("100000.0.0", None),
        (" 1.2.3", None),
        ("", None),
        (None, None),
        (123, None),
    ],
)
def test_client_2_versions_are_strict(text: object, parsed: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == parsed


def test_client_2_version_order_and_plausibility() -> None:
    assert version_below("0.99.0", "0.171.0") and not version_below("0.171.0", "0.171.0")
    assert version_below("junk", "0.0.0")  # a malformed version is the lowest
    assert newest_version("0.171.0", None, "0.172.0", "bad", "0.9.9") == "0.172.0"
    assert newest_version(None, "x") is None
    assert plausible_version("1.9.0", "0.171.0") and not plausible_version("2.0.0", "0.171.0")
    assert not plausible_version("0.1", "0.171.0")


def test_client_1_identity_is_replaced_whole() -> None:
    identity = _Identity("1.0.0")
    assert identity.effective == "1.0.0"
    identity.use("1.2.0")
    assert identity.replaced({"user-agent": "other/9", "x-client": "a", "session": "s"}) == {
        "session": "s",
        "user-agent": "client/1.2.0",
    }
    with pytest.raises(ValueError, match="not a client version"):
        identity.use("1.2")
    identity.note_floors({"m1": "1.5.0", "m2": "", "m3": "bad"})
    assert identity.model_floor("m1") == "1.5.0" and identity.model_floor("m2") is None
    identity.note_floors({"m1": ""})  # listed again without a floor: none now
    assert identity.model_floor("m1") is None
