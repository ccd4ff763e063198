"""Model calls go straight to their endpoint, past FastAPI's dependency solving and middleware (#19).

The model endpoints stay ordinary FastAPI routes (OpenAPI lists them; they take the request and
their path parameters as strings). ``ModelRoutes`` is the ASGI app uvicorn serves, outside FastAPI:
it asks Starlette's routing (each route's public ``matches``: its path, its converters, its
methods) whether a ``POST`` is one of them and calls the endpoint itself, so a model call passes no
routing walk over the app's other routes, dependency solving or exit stack, and none of the middleware
FastAPI puts around every app (server errors, OpenTelemetry exception events — SubLane configures
no OpenTelemetry —, an app-wide body limit it does not set). What those gave model calls is kept
here: exceptions get the app's own handlers, and a bug becomes the app's 500 (logged by that
handler, in the client's error shape) and is raised on to the server, as Starlette's
``ServerErrorMiddleware`` does. Model bodies are bounded where they are read
(``routes/_bodies.py``, ``SUBLANE_MAX_BODY_MB``). Everything else goes to the FastAPI app.
Measured in BENCHMARKS.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi.routing import APIRoute
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from sublane_gateway._start_pacer import StartPacer
from sublane_gateway.routes import ReplyResponse

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_FULL = Match.FULL

Endpoint = Callable[..., Awaitable[Response]]
Handler = Callable[[Request, Exception], Awaitable[Response]]


class ModelRoutes:
    """Serves ``POST`` model routes directly; everything else (lifespan included) goes to ``app``."""

    def __init__(self, app: Starlette, routes: Iterable[APIRoute], pacer: StartPacer | None = None) -> None:
        self.app = app
        self.pacer = pacer
        self._routes: list[tuple[APIRoute, Endpoint]] = [
            (route, route.endpoint) for route in routes if route.methods == {"POST"}
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            for route, endpoint in self._routes:
                match, child_scope = route.matches(scope)
                if match is _FULL:
                    scope.update(child_scope)  # path_params, endpoint, route: as Starlette's router sets them
                    params = child_scope["path_params"]
                    scope["app"] = self.app  # as Starlette sets it: request.app, its state
                    root_path = getattr(self.app, "root_path", "")
                    if root_path:  # as FastAPI sets it
                        scope["root_path"] = root_path
                    pacer = self.pacer
                    if pacer is not None and not pacer.take():
                        await pacer.wait()  # a burst: this call's first step waits a turn or more
                    await self._serve(scope, receive, send, endpoint, params)
                    return
        await self.app(scope, receive, send)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, endpoint: Endpoint, params: dict[str, Any]
    ) -> None:
        request = Request(scope, receive, send)
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        response: Response | None = None
        try:
            try:
                response = await endpoint(request, **params)
            except Exception as exc:
                handler = _handler_for(self.app, exc)
                if handler is None:
                    raise
                response = await handler(request, exc)
            if isinstance(response, ReplyResponse):  # it says itself whether it started
                await response(scope, receive, send)
            else:
                await response(scope, receive, sending)
        except Exception as exc:  # as Starlette's ServerErrorMiddleware: the 500, then the server logs it
            error = await self._server_error(request, exc)
            if not (started or (isinstance(response, ReplyResponse) and response.started)):
                await error(scope, receive, send)
            raise

    async def _server_error(self, request: Request, exc: Exception) -> Response:
        """The app's 500 for an exception no handler takes (its ``Exception`` handler logs it)."""
        handlers = self.app.exception_handlers
        handler = handlers.get(Exception) or handlers.get(500)
        if handler is None:
            return PlainTextResponse("Internal Server Error", status_code=500)
        return await handler(request, exc)  # type: ignore[no-any-return]


def _handler_for(app: Starlette, exc: Exception) -> Handler | None:
    """The app's exception handler for ``exc`` (the most specific class), except the catch-all."""
    handlers = app.exception_handlers
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        handler = handlers.get(cls)
        if handler is not None:
            return handler  # type: ignore[no-any-return]
    return None
