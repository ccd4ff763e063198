"""Google Code Assist (``v1internal``) as a client protocol (CLIENT-6): the Gemini CLI in Google
sign-in mode (``CODE_ASSIST_ENDPOINT``) and the Antigravity clients (``CLOUD_CODE_URL``).

A Code Assist call is a Gemini call in an envelope: :func:`generate_call` and :func:`count_call`
take the Gemini request out of the client's body, :func:`enveloped_json` and
:class:`EnvelopedStream` put the Gemini answer into ``{"response": …}``; errors keep Google's RPC
shape (the Gemini protocol's). The set-up and read methods answer from :mod:`._setup`. Nothing
here knows a provider: the gateway serves the unwrapped call as a Gemini call, through the hub.
"""

from sublane_protocols.code_assist._envelope import EnvelopedStream, enveloped, enveloped_json
from sublane_protocols.code_assist._request import GeminiCall, count_call, generate_call
from sublane_protocols.code_assist._setup import (
    EMPTY_ANSWERS,
    ONBOARD_OPERATION,
    TIER_ID,
    ModelRoom,
    available_models_answer,
    key_project,
    load_code_assist_answer,
    onboard_answer,
    user_quota_answer,
)

#: The methods whose body is a model call.
GENERATE = "generateContent"
STREAM = "streamGenerateContent"
COUNT = "countTokens"

__all__ = [
    "COUNT",
    "EMPTY_ANSWERS",
    "GENERATE",
    "ONBOARD_OPERATION",
    "STREAM",
    "TIER_ID",
    "EnvelopedStream",
    "GeminiCall",
    "ModelRoom",
    "available_models_answer",
    "count_call",
    "enveloped",
    "enveloped_json",
    "generate_call",
    "key_project",
    "load_code_assist_answer",
    "onboard_answer",
    "user_quota_answer",
]
