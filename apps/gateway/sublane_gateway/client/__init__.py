"""The client API of SPEC §14: what coding clients and SDKs call with a SubLane key."""

from fastapi import APIRouter

from sublane_gateway.client import _chat, _messages, _models, _responses, _responses_ws
from sublane_gateway.client._runtime import ClientRuntime, build_runtime, client_runtime

router = APIRouter()
for _module in (_responses, _responses_ws, _chat, _messages, _models):
    router.include_router(_module.router)

__all__ = ["ClientRuntime", "build_runtime", "client_runtime", "router"]
