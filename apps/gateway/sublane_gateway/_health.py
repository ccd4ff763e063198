"""``GET /healthz`` and ``GET /readyz`` for load balancers and orchestrators (OPS-8).

Both are unauthenticated, cheap and never reach an upstream. ``/healthz`` answers while the process
serves at all; ``/readyz`` also reads the schema revision from the database, so it fails (503) when
the database cannot be read or was not migrated to the revision this code expects, and — on a
replica with ``SUBLANE_REDIS_URL`` — when Redis does not answer (SCALE-4).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from sqlalchemy.engine import Engine
from starlette.responses import JSONResponse

from sublane_gateway._state import gateway_state

router = APIRouter(tags=["operations"])

_NO_STORE = {"cache-control": "no-store"}


@router.get("/healthz")
async def healthz() -> JSONResponse:
    """The process is alive and its event loop answers. Touches nothing else."""
    return JSONResponse({"status": "ok"}, headers=_NO_STORE)


def _schema_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        value = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    return None if value is None else str(value)


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready to serve: the database answers and its schema is the one this code expects."""
    state = gateway_state(request)
    checks: dict[str, Any] = {}
    try:
        revision = await anyio.to_thread.run_sync(_schema_revision, state.engine)
    except Exception as exc:  # any failure to read means "not ready", never a 500
        checks["database"] = f"unreachable: {type(exc).__name__}"
        checks["schema"] = "unknown"
    else:
        checks["database"] = "ok"
        checks["schema"] = (
            "ok"
            if revision == state.schema_head
            else f"at {revision or 'none'}, expected {state.schema_head}"
        )
    runtime = getattr(request.app.state, "client", None)
    checks["runtime"] = "ok" if runtime is not None else "starting"
    coordination = runtime.coordination if runtime is not None else None
    if coordination is not None:  # SCALE-4: without Redis no model request is admitted
        checks["coordination"] = "ok" if await coordination.ready() else "unreachable"
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not_ready", "schema_revision": state.schema_head, "checks": checks},
        status_code=200 if ready else 503,
        headers=_NO_STORE,
    )
