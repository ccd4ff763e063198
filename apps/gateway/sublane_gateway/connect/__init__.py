"""CONNECT: set-up texts for the clients, generated from one template per client (``templates/``)."""

from sublane_gateway.connect._templates import (
    ClientTemplate,
    ConnectError,
    check_url,
    connect_text,
    template,
    templates,
)

__all__ = ["ClientTemplate", "ConnectError", "check_url", "connect_text", "template", "templates"]
