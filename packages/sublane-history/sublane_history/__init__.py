"""Request records: what happened to every model call, for admins and for each member (SPEC §13)."""

__all__: list[str] = []
