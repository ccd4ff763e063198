"""What the Anthropic API is known to answer (CLIENT-7): the public Messages API's vocabulary
(``sublane_providers.MESSAGES_VOCABULARY``, its 402 ``billing_error`` among the error types), the
code the kit gives a refused key and the one the adapter gives a 400 of a key without credit.
Anything else is relayed as before and reported as an upstream change."""

from __future__ import annotations

from sublane_providers import MESSAGES_VOCABULARY
from sublane_providers.kit import UNAUTHORIZED_CODE

#: What :meth:`AnthropicAdapter.classify_failure` reports for "Your credit balance is too low".
NO_CREDIT_CODE = "credit_balance_too_low"

VOCABULARY = MESSAGES_VOCABULARY.adding(error_codes=(UNAUTHORIZED_CODE, NO_CREDIT_CODE))
