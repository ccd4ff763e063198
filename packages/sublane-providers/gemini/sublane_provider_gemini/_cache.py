"""How long the Gemini API keeps an implicit prompt-cache prefix (COST-4).

Gemini's implicit caching publishes no lifetime (prefixes are kept while capacity lasts; Google's
advice is to "send requests with a similar prefix in a short amount of time"), so SubLane takes the
same 5 minutes as the other providers: a later turn that missed after a longer pause is ``expired``.
"""

from __future__ import annotations

from typing import Final

CACHE_LIFETIME_S: Final = 300.0
