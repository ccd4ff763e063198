"""OPS-7: the data folder is 0700, the database and key files 0600; fixed at start, with a log line."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import sqlalchemy as sa

from sublane_core import Settings

_log = logging.getLogger("sublane.gateway")


def secure_data_files(settings: Settings) -> list[str]:
    """Tighten what is too open; the paths fixed (for the log and the tests)."""
    fixed: list[str] = []
    folders: list[Path] = [settings.data_dir]
    files: list[Path] = [settings.credentials_key_path]
    url = sa.make_url(settings.effective_database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        database = Path(url.database)
        folders.append(database.parent)
        files += [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    for path, mode in [(folder, 0o700) for folder in dict.fromkeys(folders)] + [
        (file, 0o600) for file in files
    ]:
        try:
            current = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if current & ~mode:
            try:
                path.chmod(mode)
            except OSError as exc:
                _log.warning("could not restrict %s (mode %o): %s", path, current, exc.strerror)
                continue
            _log.warning("%s was mode %o; set to %o (OPS-7)", path, current, mode)
            fixed.append(str(path))
    return fixed
