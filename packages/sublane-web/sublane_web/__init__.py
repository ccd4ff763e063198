"""The admin and personal web views served by the gateway at `/` (SPEC §16).

Static files only: one HTML shell, one stylesheet and a few ES modules that talk to the JSON
management API with the session cookie. :func:`mount` adds the page routes and the assets to an app.
"""

from sublane_web._mount import PAGES, STATIC_DIR, STATIC_PREFIX, mount

__all__ = [
    # serving the views
    "mount",
    "PAGES",
    # the assets
    "STATIC_DIR",
    "STATIC_PREFIX",
]
