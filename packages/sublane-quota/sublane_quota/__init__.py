"""The quota observer: reads and normalizes subscription quota for quota-aware selection (SPEC §9–10)."""

__all__: list[str] = []
