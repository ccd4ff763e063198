"""Running the simulator's ASGI app with uvicorn in a background thread with its own event loop."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

__all__ = ["ServerThread", "bind_listener", "make_config"]

_START_TIMEOUT_S = 15.0


def make_config(app: ASGIApp, **options: object) -> uvicorn.Config:
    """uvicorn settings shared by the thread runner and the CLI.

    `log_config=None` keeps uvicorn from reconfiguring logging of the host process (tests that also
    run the gateway's own uvicorn must not have their loggers touched).
    """
    defaults: dict[str, object] = {
        "log_config": None,
        "access_log": False,
        "lifespan": "off",
        "ws_per_message_deflate": True,
        "timeout_graceful_shutdown": 1,
    }
    defaults.update(options)
    return uvicorn.Config(app, **defaults)  # type: ignore[arg-type]


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening socket bound before uvicorn starts, so port 0 resolves to a known port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(2048)
    listener.setblocking(False)
    return listener


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (it is, with `uvicorn[standard]`), else the default loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on supported platforms
        return None
    return uvloop.new_event_loop


class ServerThread:
    """uvicorn serving `app` on a socket bound before start-up, so the port is known at once."""

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self._socket = bind_listener(host, port)
        bound_host, bound_port = self._socket.getsockname()[:2]
        shown_host = f"[{bound_host}]" if self._socket.family == socket.AF_INET6 else bound_host
        self.base_url = f"http://{shown_host}:{bound_port}"
        self.port: int = bound_port
        self._server = uvicorn.Server(make_config(app, backlog=2048))
        self._thread = threading.Thread(target=self._run, name=f"sublane-sim:{bound_port}", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                runner.run(self._server.serve(sockets=[self._socket]))
        except BaseException as exc:  # reported to the starting thread
            self._error = exc

    def start(self) -> None:
        self._thread.start()
        deadline = threading.Event()
        for _ in range(int(_START_TIMEOUT_S / 0.01)):
            if self._server.started or not self._thread.is_alive():
                break
            deadline.wait(0.01)
        if not self._server.started:
            self.stop()
            raise RuntimeError(f"sublane-sim failed to start: {self._error!r}")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
