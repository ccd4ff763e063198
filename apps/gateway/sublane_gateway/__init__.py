"""SubLane gateway: the one process that wires every package and serves the APIs."""

from sublane_gateway._app import create_app

__version__ = "0.1.0"

__all__ = ["create_app"]
