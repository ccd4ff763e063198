"""What Claude Code's Messages backend is known to answer (CLIENT-7): the public Messages API's
vocabulary (``sublane_providers.MESSAGES_VOCABULARY``, PROTOCOLS §2.4–2.6) and what only Claude
Code's calls get: ``safeguard_results`` of its server-side checks (CLIENT-4) and the version
refusal (CLIENT-3). Anything else is relayed as before and reported."""

from __future__ import annotations

from sublane_providers import MESSAGES_VOCABULARY

VOCABULARY = MESSAGES_VOCABULARY.adding(
    answer_fields=("safeguard_results",),
    terminal_fields=("safeguard_results",),
    error_codes=("claude_code_version_too_old",),
)
