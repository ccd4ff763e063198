"""The admin and personal web views served by the gateway at `/` (SPEC §16)."""

__all__: list[str] = []
