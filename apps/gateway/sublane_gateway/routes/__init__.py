"""The client API of SPEC §14: the routes coding clients and SDKs call with a SubLane key.

Each route reads its client protocol and hands the call to :mod:`sublane_gateway.pipeline`.
"""

from fastapi import APIRouter
from fastapi.routing import APIRoute

from sublane_gateway.routes import (
    _chat,
    _code_assist,
    _gemini,
    _key_usage,
    _messages,
    _models,
    _responses,
    _responses_ws,
)
from sublane_gateway.routes._replies import ReplyResponse

#: Each protocol's router, in the order the app includes them (each itself: no aggregate copy).
routers: tuple[APIRouter, ...] = tuple(
    _module.router
    for _module in (_responses, _responses_ws, _chat, _messages, _models, _key_usage, _gemini, _code_assist)
)

#: The model-call routes (every ``POST``), which ``ModelRoutes`` serves past FastAPI's routing.
MODEL_CALL_ROUTES = [
    route
    for _module in (_responses, _chat, _messages, _gemini, _code_assist)
    for route in _module.router.routes
    if isinstance(route, APIRoute) and route.methods == {"POST"}
]

__all__ = ["MODEL_CALL_ROUTES", "ReplyResponse", "routers"]
