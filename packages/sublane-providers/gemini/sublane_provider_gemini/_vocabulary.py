"""What the Gemini API is known to answer (CLIENT-7): unnamed ``data:`` chunks of
``GenerateContentResponse`` and Google's canonical error statuses. Anything else is relayed as
before and reported."""

from __future__ import annotations

from sublane_providers import UpstreamVocabulary

_of = UpstreamVocabulary.of

#: The fields of a ``GenerateContentResponse`` (and of an error chunk).
ANSWER_FIELDS = _of(
    "candidates", "promptFeedback", "usageMetadata", "modelVersion", "responseId", "createTime",
    "modelStatus", "error",
)  # fmt: skip

#: Google's canonical statuses, lower-cased as the stream observer reports them, and the kit's code.
ERROR_CODES = _of(
    "cancelled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
    "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
    "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated", "unauthorized",
    "upstream_error",
    "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "INTERNAL", "UNAVAILABLE", "UNAUTHENTICATED",
)  # fmt: skip

VOCABULARY = UpstreamVocabulary(
    events=frozenset(),
    answer_fields=ANSWER_FIELDS,
    terminal_fields=ANSWER_FIELDS,
    error_codes=ERROR_CODES,
)
