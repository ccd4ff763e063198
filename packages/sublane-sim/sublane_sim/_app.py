"""The simulator's ASGI application: every provider's routes on one server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ._antigravity import antigravity_routes
from ._claude import claude_routes
from ._codex import codex_routes
from ._control import control_routes
from ._http import record_request
from ._oauth import oauth_routes
from ._openai_api import openai_api_routes

if TYPE_CHECKING:
    from ._simulator import Simulator

__all__ = ["build_app"]


async def _unknown(request: Request) -> Response:
    """Log requests to paths no provider serves, so tests can see what a client tried."""
    record, _ = await record_request(request, "unknown", "unknown")
    record.status, record.outcome = 404, "rejected"
    return JSONResponse(
        {"error": {"type": "not_found_error", "message": f"no sim route for {request.url.path}"}}, 404
    )


def build_app(sim: Simulator) -> Starlette:
    routes = [
        *control_routes(),
        *codex_routes(),
        *oauth_routes(),
        *claude_routes(),
        *antigravity_routes(),
        *openai_api_routes(),
        Route("/{path:path}", _unknown, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]),
    ]
    app = Starlette(routes=routes)
    app.state.sim = sim
    return app
