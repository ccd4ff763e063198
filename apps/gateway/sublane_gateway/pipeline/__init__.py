"""The request pipeline: from an authenticated principal to a relayed answer, for every client
protocol and every provider, with no web framework in its way (routes live in ``routes/``).

Steps, one module each: ``_schedule`` (which providers can serve the call, policy, a slot),
``_send`` (the upstream request with retries, refresh and refusals), ``_relay`` / ``_collect``
(the answer, untouched or translated), ``_call`` (the record and the single release).
``_entry.serve_call`` runs them in order.
"""

from sublane_gateway.pipeline._aliases import effective_aliases
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._entry import CallSpec, refusal_reply, serve_call
from sublane_gateway.pipeline._group_models import group_models, listed_models, resolve_alias, served_by_group
from sublane_gateway.pipeline._keys import KeyAuthenticator, Principal
from sublane_gateway.pipeline._quota import observe_exhaustion
from sublane_gateway.pipeline._relay import finish_call
from sublane_gateway.pipeline._reply import (
    JsonReply,
    Reply,
    StreamReply,
    error_reply,
    json_reply,
    sublane_error_reply,
)
from sublane_gateway.pipeline._review import review_link
from sublane_gateway.pipeline._runtime import ClientRuntime, build_runtime, client_runtime, default_egress
from sublane_gateway.pipeline._schedule import check_policy, schedule, serving_providers, split_model
from sublane_gateway.pipeline._send import report_refusal

__all__ = [
    "CallSpec",
    "ClientRuntime",
    "JsonReply",
    "KeyAuthenticator",
    "ModelCall",
    "Principal",
    "Reply",
    "StreamReply",
    "build_runtime",
    "default_egress",
    "check_policy",
    "effective_aliases",
    "client_runtime",
    "error_reply",
    "finish_call",
    "group_models",
    "json_reply",
    "listed_models",
    "observe_exhaustion",
    "refusal_reply",
    "report_refusal",
    "resolve_alias",
    "review_link",
    "schedule",
    "serve_call",
    "served_by_group",
    "serving_providers",
    "split_model",
    "sublane_error_reply",
]
