"""SCALE-7: what each of ``SUBLANE_WORKERS``' processes loads.

uvicorn starts its workers with ``spawn`` and hands them import strings, so the app factory and the
HTTP protocol class live here at module level; each worker reads the same environment the parent
did (the parent wrote its command-line overrides into it) and builds its own app. The workers share
one listening socket (the kernel spreads connections over them) and their limits through Redis.
"""

from __future__ import annotations

from sublane_core import configure_logging
from sublane_gateway._app import asgi_app, create_app
from sublane_gateway._connection_guard import GuardedHttp
from sublane_gateway._gc import CollectorPausedInBursts, freeze_startup_objects, rarer_collections
from sublane_gateway._model_routes import ModelRoutes
from sublane_gateway._settings import gateway_settings
from sublane_gateway._switching import loop_first_switching

_settings = gateway_settings()


class WorkerHttp(GuardedHttp):
    """OPS-4's slow-client guard, with this environment's header and body timeouts."""

    header_timeout_s = _settings.client_header_timeout_s
    body_timeout_s = _settings.body_timeout_s


def worker_app() -> ModelRoutes:
    """One worker's app (uvicorn's ``factory``)."""
    configure_logging(_settings.log_level, _settings.log_format)
    app = create_app(_settings, when_started=freeze_startup_objects)  # threads run here: no fork
    freeze_startup_objects()
    rarer_collections()
    loop_first_switching()
    return asgi_app(app, CollectorPausedInBursts())
