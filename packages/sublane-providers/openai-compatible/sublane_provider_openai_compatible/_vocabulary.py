"""What an OpenAI-compatible server is known to answer (CLIENT-7): the fields and error codes of
OpenAI's Chat Completions reference (``sublane_providers.CHAT_COMPLETIONS_VOCABULARY``; servers
vary, so whatever one adds beyond the reference is shown to the operator), the code the kit gives
a refused key, the adapter's own for a refused ``stream_options`` and the 402 of a prepaid key
without credit the kit knows. Anything else is relayed as
before and reported as an upstream change."""

from __future__ import annotations

from sublane_providers import CHAT_COMPLETIONS_VOCABULARY
from sublane_providers.kit import UNAUTHORIZED_CODE

#: What :meth:`CompatibleAdapter.classify_failure` reports for a refusal naming ``stream_options``.
STREAM_OPTIONS_REFUSED = "stream_options_unsupported"

#: The ``type`` of DeepSeek's 402 "Insufficient Balance", a prepaid key's credit used up (PAID-4).
NO_BALANCE_TYPE = "unknown_error"

VOCABULARY = CHAT_COMPLETIONS_VOCABULARY.adding(
    error_codes=(UNAUTHORIZED_CODE, STREAM_OPTIONS_REFUSED, NO_BALANCE_TYPE)
)
