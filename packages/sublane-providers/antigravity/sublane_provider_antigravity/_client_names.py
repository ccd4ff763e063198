"""The model names the Gemini CLI sends that Antigravity does not list, and the native id each
stands for: every group's built-in aliases (ALIAS-1; admins may override or remove them).

The Gemini CLI (``@google/gemini-cli`` 0.61, ``packages/core/src/config/models.ts``) rewrites
what its user asks for before sending it: ``-m gemini-3-flash`` and ``-m flash`` go out as its
"latest flash" (``gemini-3.8-flash``), ``-m pro`` as ``gemini-3.1-pro-preview``, and its preview
names (``gemini-3-pro-preview``, ``gemini-3-flash-preview``) go out as written; ``-m gemini-3-pro``
is sent as such, although Antigravity lists each thinking level as its own id. Antigravity lists
``gemini-3-flash``, ``gemini-3-pro-high``/``-low``, ``gemini-3.1-pro-high``/``-low`` and
``gemini-3.1-flash-lite`` (PROTOCOLS.md §3.9). A name with a level stands for the ``-high`` id:
the CLI's default thinking is its highest. Observed with the real CLI against SubLane in
``tests/test_real_clients.py``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

GEMINI_CLI_NAMES: Final = MappingProxyType(
    {
        "gemini-3.8-flash": "gemini-3-flash",  # the CLI's LATEST_GEMINI_FLASH_MODEL
        "gemini-3.5-flash": "gemini-3-flash",  # its BASE_GEMINI_FLASH_MODEL
        "gemini-3-flash-preview": "gemini-3-flash",  # its PREVIEW_GEMINI_FLASH_MODEL
        "gemini-3-pro": "gemini-3-pro-high",
        "gemini-3-pro-preview": "gemini-3-pro-high",  # its PREVIEW_GEMINI_MODEL
        "gemini-3.1-pro": "gemini-3.1-pro-high",
        "gemini-3.1-pro-preview": "gemini-3.1-pro-high",  # its PREVIEW_GEMINI_3_1_MODEL (-m pro)
        "gemini-3.1-pro-preview-customtools": "gemini-3.1-pro-high",
        "gemini-3.5-flash-lite": "gemini-3.1-flash-lite",  # its LATEST_GEMINI_FLASH_LITE_MODEL
    }
)
