"""How ``sublane serve`` keeps the garbage collector from stopping the event loop (issue #19).

Every collection stops the event loop for as long as it walks: a full collection of a built
gateway took about 100 ms, a full one of a warmed-up gateway 13–30 ms, and with 300 streams open
Python ran one every two or three seconds — a spike in every stream's next chunk each time. Two
measures, both only for the serving process (tests build many apps in one process):

* What the process built before serving lives as long as the process: it is collected once and
  frozen (``gc.freeze``) out of later walks, once when the app is built and again when the
  lifespan startup (runtime, adapters, pools, the first compiled statements) has completed
  (``create_app(when_started=…)``).
* A served call leaves no reference cycles behind (measured with ``gc.DEBUG_SAVEALL``: none per
  call, streaming or not), so what the young generations promote is a stream's objects that were
  still in use and are freed by reference counting soon after, never by the collector. Full
  collections, which such promotions trigger, are made ten times rarer (the third threshold 10 →
  :data:`FULL_COLLECTION_THRESHOLD`); the young generations are collected as before. Cycles made
  elsewhere (errors, management) are still collected, later.
"""

from __future__ import annotations

import gc

FULL_COLLECTION_THRESHOLD = 100


def freeze_startup_objects() -> int:
    """Collect once, then freeze what is left; the number of frozen objects."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def rarer_full_collections() -> tuple[int, int, int]:
    """Raise the third collection threshold (see the module's docstring); the thresholds now."""
    young, middle, _old = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)
    return gc.get_threshold()
