"""Test-only provider distributions (each its own package with an entry point).

Their tests run where the distribution is installed (tox env ``provider-parrot``); elsewhere they are
not collected, so the gateway's own suite runs with the three real providers only.
"""

from importlib.util import find_spec

collect_ignore_glob = [] if find_spec("sublane_provider_parrot") else ["parrot/*"]
