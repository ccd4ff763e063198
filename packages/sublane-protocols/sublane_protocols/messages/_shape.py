"""Shape checks shared by the Messages sides: a malformed body is a ``TranslationRefused`` naming the
field, never an exception of another type."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from sublane_protocols._translators import TranslationRefused

UNSUPPORTED: Final = "unsupported_for_provider"
_DATA_URL: Final = re.compile(
    r"data:(?P<mime>[\w.+-]+/[\w.+-]+)(?:;[\w.+-]+=[\w.+-]+)*;base64,(?P<data>.*)", re.S
)


def refuse(message: str, param: str | None, *, code: str = "invalid_request") -> NoReturn:
    raise TranslationRefused(message, code=code, param=param)


def unsupported(message: str, param: str | None) -> NoReturn:
    """XLAT-3: something the target cannot honour and that would change the answer if ignored."""
    raise TranslationRefused(message, code=UNSUPPORTED, param=param)


def require_object(value: Any, param: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        refuse(f"'{param}' must be an object.", param)
    return value


def require_list(value: Any, param: str) -> list[Any]:
    if not isinstance(value, list):
        refuse(f"'{param}' must be an array.", param)
    return value


def require_string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        refuse(f"'{param}' must be a string.", param)
    return value


def require_name(value: Any, param: str) -> str:
    if not isinstance(value, str) or not value:
        refuse(f"'{param}' must be a non-empty string.", param)
    return value


def optional_string(value: Any, param: str) -> str | None:
    return None if value is None else require_string(value, param)


def optional_bool(value: Any, param: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        refuse(f"'{param}' must be a boolean.", param)
    return value


def optional_number(value: Any, param: str) -> float | int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        refuse(f"'{param}' must be a number.", param)
    return value


def optional_positive_int(value: Any, param: str) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value < 1:
        refuse(f"'{param}' must be a positive integer.", param)
    return int(value)


def string_list(value: Any, param: str) -> list[str]:
    """A list of strings (a single string is read as a list of one)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    items = require_list(value, param)
    return [require_string(item, f"{param}[{index}]") for index, item in enumerate(items)]


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def count(value: Any) -> int:
    """A token count as reported, 0 when absent or not a count."""
    return value if is_int(value) and value >= 0 else 0


def field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def text_field(value: Any, key: str) -> str | None:
    """``value[key]`` when it is a string (so it can be looked up in sets and tables), else ``None``."""
    found = field(value, key)
    return found if isinstance(found, str) else None


def data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a ``data:<mime>;base64,…`` URL, else ``None``."""
    match = _DATA_URL.fullmatch(url)
    return (match["mime"].lower(), match["data"]) if match else None


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
