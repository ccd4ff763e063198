"""Model calls go straight to their endpoint, past FastAPI's routing and dependency layers (#19).

The model endpoints stay ordinary FastAPI routes (OpenAPI lists them; they take the request and
their path parameters as strings). This pure ASGI middleware finds a ``POST`` to one of them by its
compiled path pattern and calls the endpoint itself: no walk over every management route, no
dependency solving, no per-request exit stack. Exceptions get the app's own handlers, as they
would inside FastAPI; anything without one goes on to the server-error handler as before.
Measured in BENCHMARKS.md.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

Endpoint = Callable[..., Awaitable[Response]]


class ModelRoutes:
    """Serves ``POST`` model routes directly; everything else goes to ``app``."""

    def __init__(self, app: ASGIApp, routes: Iterable[APIRoute]) -> None:
        self.app = app
        self._routes: list[tuple[re.Pattern[str], Endpoint, dict[str, Any]]] = [
            (route.path_regex, route.endpoint, route.param_convertors)
            for route in routes
            if route.methods == {"POST"}
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path = scope["path"]
            for pattern, endpoint, convertors in self._routes:
                match = pattern.match(path)
                if match is not None:
                    params = {
                        name: convertors[name].convert(value) for name, value in match.groupdict().items()
                    }
                    scope["path_params"] = params
                    await self._serve(scope, receive, send, endpoint, params)
                    return
        await self.app(scope, receive, send)

    @staticmethod
    async def _serve(
        scope: Scope, receive: Receive, send: Send, endpoint: Endpoint, params: dict[str, Any]
    ) -> None:
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request, **params)
        except Exception as exc:
            handler = _handler_for(scope["app"], exc)
            if handler is None:
                raise  # the server-error handler renders and logs it
            response = await handler(request, exc)
        await response(scope, receive, send)


def _handler_for(app: Any, exc: Exception) -> Callable[[Request, Exception], Awaitable[Response]] | None:
    """The app's exception handler for ``exc`` (the most specific class), except the catch-all."""
    handlers = app.exception_handlers
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        handler = handlers.get(cls)
        if handler is not None:
            return handler  # type: ignore[no-any-return]
    return None
