"""How long Google keeps an implicit prompt-cache prefix (COST-4).

Gemini's implicit caching publishes no lifetime: prefixes are kept in memory while capacity lasts
(Vertex AI adds a durable tier, expired within 24 hours, most entries sooner), and Google's advice
is to "send requests with a similar prefix in a short amount of time". Antigravity serves through
Code Assist, whose caching is not documented at all, so SubLane takes the same 5 minutes as the
other providers: a later turn that missed after a longer pause is called ``expired``.
"""

from __future__ import annotations

from typing import Final

CACHE_LIFETIME_S: Final = 300.0
