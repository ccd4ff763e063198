"""Admission, account leases, waiting, conversation affinity and cooldowns (SPEC §1–7)."""

__all__: list[str] = []
