"""What the OpenAI API is known to answer (CLIENT-7): the public Responses API's vocabulary
(``sublane_providers.RESPONSES_VOCABULARY``) and the code the kit gives a refused key. Anything
else is relayed as before and reported as an upstream change."""

from __future__ import annotations

from sublane_providers import RESPONSES_VOCABULARY
from sublane_providers.kit import UNAUTHORIZED_CODE

VOCABULARY = RESPONSES_VOCABULARY.adding(error_codes=(UNAUTHORIZED_CODE,))
