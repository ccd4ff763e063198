"""What cloudcode-pa is known to answer (CLIENT-7): unnamed ``data:`` chunks (no SSE event names),
the wrapper's fields around a Gemini response, Google's RPC statuses and ErrorInfo reasons
(PROTOCOLS §3.4, §3.7). Anything else is relayed as before and reported."""

from __future__ import annotations

from sublane_providers import UpstreamVocabulary

_of = UpstreamVocabulary.of

#: The envelope of an answer and of each chunk: ``{"response", "traceId", "metadata"}`` (an error:
#: ``{"error"}``).
ENVELOPE_FIELDS = _of("response", "traceId", "metadata", "error")

#: Google's canonical statuses and the cloudcode-pa ErrorInfo reasons, lower-cased as
#: :func:`classify_failure` reports them.
ERROR_CODES = _of(
    "cancelled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
    "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
    "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated",
    "rate_limit_exceeded", "quota_exhausted", "model_capacity_exhausted", "no_capacity",
    "upstream_error",
)  # fmt: skip

VOCABULARY = UpstreamVocabulary(
    events=frozenset(),
    answer_fields=ENVELOPE_FIELDS,
    terminal_fields=ENVELOPE_FIELDS,
    error_codes=ERROR_CODES,
)
