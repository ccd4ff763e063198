"""How long the Codex backend keeps a prompt-cache prefix (COST-4).

OpenAI documents that cached prefixes "generally remain active for 5 to 10 minutes of
inactivity, up to a maximum of one hour" (in-memory retention; the Codex CLI asks for no longer
retention). A later turn that missed after more than the lower bound, 5 minutes, is called
``expired``.
"""

from __future__ import annotations

from typing import Final

CACHE_LIFETIME_S: Final = 300.0
