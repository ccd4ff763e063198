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
  :data:`FULL_COLLECTION_THRESHOLD`). Cycles made elsewhere (errors, management) are still
  collected, later.
* For the same reason the young generation is collected every :data:`YOUNG_COLLECTION_THRESHOLD`
  net allocations instead of Python's 700 (issue #49): a burst of 500 streams started together
  leaves some 75,000 objects alive for the streams' length, which at 700 cost about 70 young and 6
  middle collections, 22–27 ms of the event loop's CPU, nearly all of it while the burst starts —
  where every millisecond is some stream's wait for its first token. At 5,000: 9–14 young
  collections and one middle, 11–13 ms (measured in CPU time, ``bench/stallwatch``). A young
  collection then takes up to about 1 ms instead of 0.15 ms; between bursts one comes every few
  thousand calls. A cycle is still found by the first young collection after it is dropped.
"""

from __future__ import annotations

import gc

FULL_COLLECTION_THRESHOLD = 100
YOUNG_COLLECTION_THRESHOLD = 5_000


def freeze_startup_objects() -> int:
    """Collect once, then freeze what is left; the number of frozen objects."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def rarer_collections() -> tuple[int, int, int]:
    """Raise the first and third collection thresholds (see the module's docstring); the
    thresholds now."""
    _young, middle, _old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, FULL_COLLECTION_THRESHOLD)
    return gc.get_threshold()
