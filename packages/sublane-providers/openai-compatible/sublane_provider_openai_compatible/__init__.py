"""SubLane provider ``openai-compatible``: any OpenAI-compatible Chat Completions server (coding
plans, vLLM, llama.cpp, Ollama…) reached with a base URL and an API key, billed per token (PAID-1).

Found by the gateway through its ``sublane.providers`` entry point; every client protocol reaches
its accounts (Chat Completions natively, the others through the hub).
"""

from sublane_core import Billing
from sublane_provider_openai_compatible._adapter import CompatibleAdapter, build_adapter
from sublane_provider_openai_compatible._credentials import NAME, parse_credentials
from sublane_provider_openai_compatible._settings import CompatibleSettings
from sublane_provider_openai_compatible._stream import ChatStreamObserver, chat_usage
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name=NAME,
    settings=CompatibleSettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=70,
    billing=Billing.METERED,
)

__all__ = [
    "PROVIDER",
    "ChatStreamObserver",
    "CompatibleAdapter",
    "CompatibleSettings",
    "build_adapter",
    "chat_usage",
    "parse_credentials",
]
