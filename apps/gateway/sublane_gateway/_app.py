"""The FastAPI application: wires settings, storage, credential encryption and the APIs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from sqlalchemy.engine import Engine

from sublane_core import (
    Clock,
    CredentialCipher,
    Settings,
    SystemClock,
    create_db_engine,
    head_revision,
    signals,
)
from sublane_gateway import management, pipeline, routes
from sublane_gateway._body_limit import BodyLimit
from sublane_gateway._bootstrap import bootstrap
from sublane_gateway._credential_key import credentials_key, key_source
from sublane_gateway._data_folder import DataFolderLock
from sublane_gateway._errors import install_error_handlers
from sublane_gateway._file_modes import secure_data_files
from sublane_gateway._gc import BurstObserver
from sublane_gateway._health import router as health_router
from sublane_gateway._key_check import verify_credentials_key, verify_credentials_key_in_child
from sublane_gateway._login_throttle import LoginThrottle
from sublane_gateway._metered_spend import any_metered_provider, metered_only, spend_ledger
from sublane_gateway._metrics import CallCounters
from sublane_gateway._metrics import router as metrics_router
from sublane_gateway._model_routes import ModelRoutes
from sublane_gateway._mutation_guard import MutationGuard
from sublane_gateway._price_loading import PriceLoading
from sublane_gateway._pricing import RecordPricing
from sublane_gateway._settings import gateway_settings
from sublane_gateway._setup_page import router as setup_router
from sublane_gateway._start_pacer import StartPacer
from sublane_gateway._state import GatewayState
from sublane_gateway.routes._websocket_denials import quiet_denials
from sublane_history import (
    HistoryReader,
    HistoryRecorder,
    Retention,
    TimingReader,
    TokenBudgets,
    UsageReader,
    UsageWriter,
)
from sublane_pricing import GenaiPrices, PriceBook
from sublane_web import mount as mount_web_views

__version__ = "0.1.0"


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    when_started: Callable[[], object] | None = None,
    key_check_in_child: bool = False,
) -> FastAPI:
    """Build the gateway app. The database must already be migrated (``sublane migrate``/``serve``).

    ``when_started`` runs once the lifespan startup is done, before the first request is served
    (``sublane serve`` freezes what startup built out of the garbage collector's walks).
    ``key_check_in_child``: OPS-3's key check runs in a forked child (``sublane serve``: a process
    without threads yet), which keeps the AES library out of a gateway without credentials.
    """
    settings = settings or gateway_settings()
    engine = create_db_engine(settings.effective_database_url)
    key = credentials_key(settings, engine)
    secure_data_files(settings)  # OPS-7, after the key file exists
    state = GatewayState(
        settings=settings,
        engine=engine,
        cipher=CredentialCipher(key),
        clock=clock or SystemClock(),
        schema_head=head_revision(),
    )
    if key_check_in_child:  # OPS-3
        engine.dispose()  # no open database connection is carried into the child (SQLite's rule)
        verify_credentials_key_in_child(
            settings.effective_database_url, key, key_source(settings), state.clock.time()
        )
    else:
        verify_credentials_key(engine, state.cipher, key_source(settings), state.clock.time())
    state.login_throttle = LoginThrottle(
        state.clock, settings.login_failures_max, settings.login_failure_window_s
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # One gateway per data folder, or replicas sharing Redis (SCALE-7); `sublane restore` checks
        # it (OPS-9).
        folder = DataFolderLock(settings.data_dir, shared=settings.redis_url is not None)
        folder.acquire()
        try:
            async with _serving(app, state):
                if when_started is not None:
                    when_started()
                yield
        finally:
            folder.release()

    app = FastAPI(
        title="SubLane",
        version=__version__,
        summary="One API in front of a team's shared subscription accounts.",
        lifespan=lifespan,
    )
    app.state.gateway = state
    app.state.metrics = None
    install_error_handlers(app)
    app.include_router(health_router)
    app.include_router(metrics_router)
    for management_router in management.routers:
        app.include_router(management_router)
    for model_router in routes.routers:
        app.include_router(model_router)
    app.include_router(setup_router)
    mount_web_views(app)  # the web views at / (SPEC §16), over the JSON API above
    app.add_middleware(
        MutationGuard, allowed_origins=settings.allowed_origins, trusted_proxies=settings.trusted_proxies
    )
    app.add_middleware(BodyLimit, limit=settings.management_body_kb * 1024)  # OPS-1
    return app


def asgi_app(app: FastAPI, burst: BurstObserver | None = None) -> ModelRoutes:
    """What the server runs: model calls straight to their endpoints, the rest into ``app`` (#19);
    ``burst`` is told when calls queue for their starts (the serving process's collector pause)."""
    per_turn = app.state.gateway.settings.model_starts_per_turn
    return ModelRoutes(app, routes.MODEL_CALL_ROUTES, StartPacer(per_turn, burst) if per_turn else None)


@asynccontextmanager
async def _serving(app: FastAPI, state: GatewayState) -> AsyncIterator[None]:
    """Everything the app runs while it serves: the pipeline, history recording and metrics."""
    settings, engine = state.settings, state.engine
    bootstrap(state)
    runtime = pipeline.build_runtime(settings, engine, state.cipher, state.clock)
    await runtime.start()
    quiet_denials()  # a key refused at a WebSocket's upgrade is no ERROR line (uvicorn's)
    app.state.client = runtime
    # Request records (HIST): queued on the request path, written by one background thread.
    retention = Retention.from_settings(settings)
    # Usage summaries (TEAM-3) are added by the same writer, in the records' transaction.
    usage = UsageWriter() if settings.usage_enabled else None
    # COST-1/2: the price book; the writer thread prices each record as it writes it.
    prices = PriceBook(engine, state.clock, GenaiPrices())
    app.state.prices = prices
    # PAID-3: metered calls' cost per UTC month, added by the same writer in the records' transaction;
    # selection asks it whether a caller's metered use is over a cap (SpendLedger.blocked).
    metered_spend = spend_ledger(engine, state.clock, prices)
    app.state.metered_spend = metered_spend
    metered = any_metered_provider()
    eligibility = runtime.scheduler.eligibility
    if metered and eligibility is not None:  # asked only when a metered account would serve a call
        eligibility.metered_spend = metered_spend
    recorder = HistoryRecorder(
        engine,
        state.clock,
        retention,
        records=settings.history_enabled,
        usage=usage,
        queue_size=settings.history_queue_max,
        outbox=runtime.outbox,
        costs=RecordPricing(prices),
        ledger=metered_spend,
    )
    recorder.start()
    if runtime.coordination is not None:  # SCALE-3: a call's record is written before its slot goes back
        runtime.coordination.slots.before_release = recorder.written
    # SUBLANE_HISTORY_ENABLED=false stops recording (to price it in benchmarks); reading still works.
    if settings.history_enabled or usage is not None:
        stop_recording = signals.request_finished.connect(recorder.record, sender=runtime)
    elif metered:  # PAID-3: the metered spend is still added (by the writer) with recording off
        stop_recording = signals.request_finished.connect(metered_only(recorder.record), sender=runtime)
    else:
        stop_recording = lambda: None  # noqa: E731
    app.state.history = recorder
    app.state.history_reader = HistoryReader(engine, state.clock, retention)
    app.state.usage_reader = UsageReader(engine, state.clock)
    app.state.timing_reader = TimingReader(engine, state.clock)
    # The admins' prices now; the built-in price data (~6 MB) by its first use, or now (or as soon
    # as one is added) where a metered account or a dollar budget prices calls on the request path.
    price_loading = PriceLoading(prices, engine)
    app.state.price_loading = price_loading
    await anyio.to_thread.run_sync(price_loading.at_start)
    stop_price_loading = signals.account_changed.connect(price_loading.changed)
    # The month's spend and the caps (restart-safe: from the database); kept fresh from the other
    # replicas every REFRESH_S while a metered provider is installed.
    await anyio.to_thread.run_sync(metered_spend.start if metered else metered_spend.refresh)
    stop_budgets = (
        await _start_budgets(runtime, engine, state.clock, RecordPricing(prices, reload=False))
        if usage is not None
        else lambda: None
    )
    # OPS-8: calls counted for /metrics; SUBLANE_METRICS_ENABLED=false prices it in benchmarks.
    counters = CallCounters() if settings.metrics_enabled else None
    stop_counting = (
        signals.request_finished.connect(counters.record, sender=runtime) if counters else lambda: None
    )
    app.state.metrics = counters
    try:
        yield
    finally:
        try:
            await runtime.close()  # calls ended by the shutdown are still recorded
        finally:
            stop_recording()
            stop_price_loading()
            stop_budgets()
            stop_counting()
            await anyio.to_thread.run_sync(recorder.close)
            await anyio.to_thread.run_sync(metered_spend.close)
            engine.dispose()


async def _start_budgets(
    runtime: pipeline.ClientRuntime, engine: Engine, clock: Clock, costs: RecordPricing
) -> Callable[[], None]:
    """Token budgets (TEAM-4): rules and this month's usage loaded once, then counted in memory as
    calls finish (before their slot is handed on); returns the disconnect. Dollar rules (COST-5)
    price a call from the price book's memory, never the database."""
    budgets = TokenBudgets(clock)
    budgets.costs = costs
    await anyio.to_thread.run_sync(budgets.load, engine)
    runtime.share_budgets(budgets, engine)
    return signals.request_finished.connect(budgets.note, sender=runtime)
