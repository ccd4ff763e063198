"""Serving the web views: every page path answers the same shell; the shell loads static modules.

Pages are rendered in the browser from the JSON API, so the server side is only the shell and the
assets. The shell is sent with a Content-Security-Policy that allows nothing but this origin: the
pages can never fetch a font, script or image from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).parent / "static"
STATIC_PREFIX = "/web-static"

PAGES: tuple[str, ...] = (
    "/",
    "/requests",
    "/usage",
    "/pool",
    "/keys",
    "/password",
    "/accounts",
    "/scheduling",
    "/admin/requests",
    "/admin/usage",
    "/members",
    "/groups",
    "/admin/alerts",
    "/admin/upstream-changes",
    "/admin/audit",
    "/get-started",
)
"""The page paths that answer the app shell; the browser picks the view from the path."""

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


async def _shell(_request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=_SECURITY_HEADERS)


class _RevalidatedStatic(StaticFiles):
    """Assets are small and change with upgrades: let browsers keep them, but always revalidate."""

    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def mount(app: Starlette) -> None:
    """Serve the web views from ``app``: the shell at each of :data:`PAGES`, the assets under
    :data:`STATIC_PREFIX`."""
    for path in PAGES:
        app.add_route(path, _shell, methods=["GET", "HEAD"], include_in_schema=False)
    app.mount(STATIC_PREFIX, _RevalidatedStatic(directory=STATIC_DIR), name="sublane-web-static")
