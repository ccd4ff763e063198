"""What the Codex backend is known to answer (CLIENT-7): the public Responses API's vocabulary
(``sublane_providers.RESPONSES_VOCABULARY``) and the backend's own events and error codes
(PROTOCOLS §1.4, §1.5). Anything else it sends is relayed as before and reported as an upstream
change."""

from __future__ import annotations

from sublane_providers import RESPONSES_VOCABULARY

VOCABULARY = RESPONSES_VOCABULARY.adding(
    events=("codex.rate_limits", "codex.response.metadata", "response.processed"),
    # the subscription's own refusals (PROTOCOLS §1.5) and its OAuth token's
    error_codes=(
        "usage_limit_reached", "usage_not_included", "unsupported_model", "token_expired",
        "token_invalidated", "invalid_token",
    ),
)  # fmt: skip
