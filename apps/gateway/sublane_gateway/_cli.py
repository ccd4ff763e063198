"""The ``sublane`` command: ``serve``, ``migrate``, ``import-sqlite``, ``backup``, ``restore``,
``rotate-key``, ``connect``, ``admin reset-password`` and ``admin reset-totp``."""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError
from sqlmodel import Session, col, select

from sublane_core import (
    CredentialKeyError,
    Settings,
    User,
    configure_logging,
    create_db_engine,
    current_revision,
    head_revision,
    known_revisions,
    upgrade_database,
)
from sublane_gateway._backup import BackupError, restore_backup, take_backup
from sublane_gateway._data_folder import DataFolderBusy, DataFolderLock
from sublane_gateway._passwords import hash_password
from sublane_gateway._sessions import forget_sessions_of
from sublane_gateway._settings import gateway_settings, gateway_settings_help
from sublane_gateway.connect import ConnectError
from sublane_gateway.connect import template as connect_template
from sublane_gateway.connect import templates as connect_templates

SHUTDOWN_GRACE_S = 5
# The child process of a schema upgrade at ``serve`` (issue #49): the core and Alembic, not the gateway.
_UPGRADE_IN_CHILD = "from sublane_core import upgrade_configured_database; upgrade_configured_database()"


def _settings_epilog() -> str:
    lines = ["settings (environment variables, also read from ./.env):"]
    for variable, default, meaning in gateway_settings_help():
        lines.append(f"  {variable:<36} default {default:<34} {meaning}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sublane", description="SubLane gateway.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="run migrations, then serve the gateway",
        epilog=_settings_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", help="address to listen on (SUBLANE_HOST)")
    serve.add_argument("--port", type=int, help="port to listen on (SUBLANE_PORT)")
    commands.add_parser("migrate", help="create or upgrade the database schema, then exit")
    importing = commands.add_parser(
        "import-sqlite",
        help="copy an SQLite data folder into the empty PostgreSQL of SUBLANE_DATABASE_URL (SCALE-1)",
    )
    importing.add_argument("path", type=Path, help="the data folder of the SQLite installation")
    backup = commands.add_parser(
        "backup",
        help="write a consistent copy of the database and credentials.key into a new folder (OPS-9)",
        description="Safe while SubLane runs: SQLite's online backup API takes one consistent snapshot.",
    )
    backup.add_argument("dest", type=Path, help="a folder that does not exist yet (or is empty)")
    restore = commands.add_parser(
        "restore",
        help="put a backup back into the data folder; SubLane must be stopped (OPS-9)",
        description="What the data folder held is kept beside it as *.pre-restore-<time>.",
    )
    restore.add_argument("src", type=Path, help="a folder written by sublane backup")
    commands.add_parser(
        "rotate-key",
        help="seal every sealed value with a new credential key; SubLane must be stopped (SCALE-8)",
        description=(
            "With credentials.key: a new key file is made (the old one is kept as "
            "credentials.key.old-<time>). With SUBLANE_CREDENTIALS_KEY: the new key is read from "
            "standard input; give it to every replica."
        ),
    )
    connect = commands.add_parser(
        "connect",
        help="print a client's set-up and a one-call try for SubLane at --url (CONNECT-2)",
        description=(
            "The same texts as GET /api/connect: paste the set-up, then the try, in a shell where"
            " SUBLANE_API_KEY holds your key. Without a gateway to ask, the model is the client's own"
            " first choice (--model to name another)."
        ),
    )
    connect.add_argument("client", choices=list(connect_templates()))
    connect.add_argument("--url", help="the URL clients reach SubLane at (default: SUBLANE_PUBLIC_URL)")
    connect.add_argument("--model", help="the model the try asks for")
    admin = commands.add_parser("admin", help="administration from the shell")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True)
    reset = admin_commands.add_parser(
        "reset-password", help="set a user's password (read from stdin) and end their sessions"
    )
    reset.add_argument("username")
    reset_totp = admin_commands.add_parser(
        "reset-totp", help="turn a user's two-factor sign-in off (a lost phone, AUTH-1)"
    )
    reset_totp.add_argument("username")
    return parser


def _load_settings(**overrides: Any) -> Settings:
    try:
        return gateway_settings(**{key: value for key, value in overrides.items() if value is not None})
    except ValidationError as exc:
        lines = [f"  {_variable(err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise SystemExit("sublane: invalid settings:\n" + "\n".join(lines)) from None
    except SettingsError as exc:  # a value pydantic-settings could not decode at all
        raise SystemExit(f"sublane: invalid settings: {exc}") from None


def _variable(loc: tuple[int | str, ...]) -> str:
    """The environment variable a settings error is about (``SUBLANE_TRUSTED_PROXIES``)."""
    if not loc:
        return "settings"
    return f"SUBLANE_{str(loc[0]).upper()}" + "".join(f"[{part}]" for part in loc[1:])


def _migrate(settings: Settings) -> None:
    engine = create_db_engine(settings.effective_database_url)
    try:
        before = current_revision(engine)
        upgrade_database(engine)
        after = head_revision()
    finally:
        engine.dispose()
    if before != after:
        print(f"sublane: database upgraded from {before or 'empty'} to {after}", file=sys.stderr)


def _ready_schema(settings: Settings) -> None:
    """SCALE-1: start on the schema this SubLane needs; an old one is upgraded only when
    ``SUBLANE_AUTO_MIGRATE`` allows (the SQLite default), else ``sublane migrate`` comes first."""
    engine = create_db_engine(settings.effective_database_url)
    try:
        at = current_revision(engine)
    finally:
        engine.dispose()
    head = head_revision()
    if at == head:
        return
    if at is not None and at not in known_revisions():
        raise SystemExit(
            f"sublane: the database schema ({at}) is newer than this SubLane ({head}): run the newer version"
        )
    if not settings.effective_auto_migrate:
        raise SystemExit(
            f"sublane: the database schema is at {at or 'nothing (an empty database)'}, this SubLane "
            f"needs {head}: run `sublane migrate` first, once, before starting the replicas "
            "(or set SUBLANE_AUTO_MIGRATE=true)"
        )
    _migrate_in_child()


def _migrate_in_child() -> None:
    """What ``sublane migrate`` does, in a child process with this process's environment and folder
    (so the same settings): the serving process never loads Alembic, nor keeps what a migration
    allocated (issue #49). The child imports only the core, not the gateway."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _UPGRADE_IN_CHILD], check=False)  # noqa: S603
    if done.returncode != 0:
        raise SystemExit(f"sublane: the schema upgrade failed (exit status {done.returncode})")


def _import_sqlite(settings: Settings, path: Path) -> None:
    from sublane_gateway._import_sqlite import ImportRefused, import_sqlite

    try:
        copied = import_sqlite(settings, path)
    except (ImportRefused, CredentialKeyError) as exc:
        raise SystemExit(f"sublane: {exc}") from None
    total = sum(copied.values())
    print(
        f"sublane: copied {total} rows from {path} ({', '.join(f'{n} {t}' for t, n in copied.items() if n)})",
        file=sys.stderr,
    )


def _serve(settings: Settings) -> None:
    import uvicorn

    from sublane_gateway._app import asgi_app, create_app
    from sublane_gateway._backlog import DRAIN_LIMIT, BacklogDrain, serve
    from sublane_gateway._connection_guard import guarded_http
    from sublane_gateway._gc import CollectorPausedInBursts, freeze_startup_objects, rarer_collections
    from sublane_gateway._switching import loop_first_switching

    configure_logging(settings.log_level, settings.log_format)
    if settings.workers > 1 and settings.redis_url is None:
        raise SystemExit(
            "sublane: SUBLANE_WORKERS above 1 needs SUBLANE_REDIS_URL (the workers share their limits there)"
        )
    try:  # a clear message before migrating; the app holds the lock while it serves
        DataFolderLock(settings.data_dir, shared=settings.redis_url is not None).acquire_and_release()
    except DataFolderBusy as exc:
        raise SystemExit(f"sublane: {exc}") from None
    from sublane_gateway.pipeline._tracing import TracingRefused, otlp_protocol

    try:  # OPS-12: an OTLP protocol SubLane cannot speak stops start-up, never silently ignored
        otlp_protocol()
    except TracingRefused as exc:
        raise SystemExit(f"sublane: {exc}") from None
    _ready_schema(settings)
    try:
        app = create_app(  # frozen again once started
            settings, when_started=freeze_startup_objects, key_check_in_child=True
        )
    except CredentialKeyError as exc:
        raise SystemExit(f"sublane: {exc}") from None
    common: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "loop": "uvloop",
        "timeout_keep_alive": max(1, round(settings.keep_alive_timeout_s)),
        "log_config": None,
        # Below INFO's threshold the access line is never printed, but uvicorn still quotes the
        # path and calls the logger for each answer (issue #19).
        "access_log": logging.getLogger("uvicorn.access").isEnabledFor(logging.INFO),
        "proxy_headers": False,
        "server_header": False,
        # Shutdown ends running requests (ADM-9) instead of waiting for 30-minute streams.
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_S,
    }
    if settings.workers > 1:
        _serve_workers(settings, app, common)
        return
    freeze_startup_objects()
    rarer_collections()
    loop_first_switching()
    backlog = BacklogDrain(settings.model_starts_per_turn or DRAIN_LIMIT)  # issue #49: a crowd's door
    config = uvicorn.Config(
        asgi_app(app, CollectorPausedInBursts()),
        http=guarded_http(settings.client_header_timeout_s, settings.body_timeout_s, backlog),
        **common,  # OPS-4: slow clients
    )
    serve(config, backlog)


def _serve_workers(settings: Settings, app: Any, common: dict[str, Any]) -> None:
    """SCALE-7: ``SUBLANE_WORKERS`` processes on one port. This process made the key and the first
    admin (once, not raced by the workers), then supervises: uvicorn restarts a worker that dies."""
    import os

    import uvicorn

    from sublane_gateway._bootstrap import bootstrap

    state = app.state.gateway
    bootstrap(state)
    state.engine.dispose()
    os.environ["SUBLANE_HOST"], os.environ["SUBLANE_PORT"] = settings.host, str(settings.port)
    uvicorn.run(
        "sublane_gateway._workers:worker_app",
        factory=True,
        workers=settings.workers,
        http="sublane_gateway._workers:WorkerHttp",
        **common,
    )


def _reset_password(settings: Settings, username: str) -> None:
    password = (
        getpass.getpass("New password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
    )
    if not 8 <= len(password) <= 256:
        raise SystemExit("sublane: the password must be 8 to 256 characters")
    from sublane_gateway.management._audit import record_action

    engine = create_db_engine(settings.effective_database_url)
    try:
        upgrade_database(engine)
        with Session(engine) as db:
            user = db.exec(select(User).where(col(User.username) == username)).first()
            if user is None or user.id is None:
                raise SystemExit(f"sublane: no user named {username!r}")
            user.password_hash = hash_password(password)
            forget_sessions_of(db, user.id)
            db.add(user)
            record_action(db, actor=None, action="user.password_reset", object_id=user.id)
            db.commit()
    finally:
        engine.dispose()
    print(f"sublane: password of {username!r} changed; their sessions have ended", file=sys.stderr)


def _reset_totp(settings: Settings, username: str) -> None:
    from sublane_gateway._totp import clear_totp
    from sublane_gateway.management._audit import record_action

    engine = create_db_engine(settings.effective_database_url)
    try:
        upgrade_database(engine)
        with Session(engine) as db:
            user = db.exec(select(User).where(col(User.username) == username)).first()
            if user is None or user.id is None:
                raise SystemExit(f"sublane: no user named {username!r}")
            clear_totp(db, user)
            record_action(
                db, actor=None, action="user.totp_reset", object_id=user.id, summary={"via": "shell"}
            )
            db.commit()
    finally:
        engine.dispose()
    print(f"sublane: two-factor sign-in of {username!r} is off", file=sys.stderr)


def _size(manifest: dict[str, Any]) -> str:
    total = sum(facts["bytes"] for facts in manifest["files"].values())
    return f"{total / (1 << 20):.1f} MiB"


def _backup(settings: Settings, dest: Path) -> None:
    try:
        manifest = take_backup(settings, dest)
    except (BackupError, OSError) as exc:
        raise SystemExit(f"sublane: backup failed: {exc}") from None
    counts = manifest["counts"]
    print(
        f"sublane: backup written to {dest} (schema {manifest['schema_revision']}, "
        f"{counts['accounts']} account(s), {counts['users']} user(s), {counts['api_keys']} key(s), "
        f"{_size(manifest)}); it holds credentials.key: keep it as safe as the key itself",
        file=sys.stderr,
    )


def _restore(settings: Settings, src: Path) -> None:
    try:
        manifest = restore_backup(settings, src)
    except (BackupError, OSError) as exc:
        raise SystemExit(f"sublane: restore failed: {exc}") from None
    revision, head = manifest["schema_revision"], head_revision()
    upgrade = f"; sublane serve upgrades it to {head} at start" if revision != head else ""
    print(
        f"sublane: restored the backup of {manifest['sublane_version']} taken at "
        f"{_utc(manifest['created_at'])} into {settings.data_dir} (schema {revision}{upgrade})",
        file=sys.stderr,
    )


def _rotate_key(settings: Settings) -> None:
    from sublane_gateway._rotate_key import RotateRefused, rotate_key

    new_key = sys.stdin.readline().strip() if settings.credentials_key is not None else None
    try:
        changed = rotate_key(settings, new_key)
    except (RotateRefused, DataFolderBusy, CredentialKeyError) as exc:
        raise SystemExit(f"sublane: rotate-key failed: {exc}") from None
    where = (
        "set SUBLANE_CREDENTIALS_KEY to the new key on every replica before starting them"
        if settings.credentials_key is not None
        else f"the new key is in {settings.credentials_key_path}; back it up with the database"
    )
    print(f"sublane: {changed} sealed value(s) sealed with the new key; {where}", file=sys.stderr)


def _connect(client: str, url: str | None, model: str | None) -> None:
    if url is None:
        url = _load_settings().public_url
        if url is None:
            raise SystemExit("sublane connect: give --url (or set SUBLANE_PUBLIC_URL)")
    chosen = connect_template(client)
    try:
        text = chosen.render(url, model or chosen.choose_model(()))
    except ConnectError as exc:
        raise SystemExit(f"sublane connect: {exc}") from None
    print(f"# {text['title']}: set-up (SUBLANE_API_KEY holds your key)")
    print(text["setup"])
    print("# try it: one model call")
    print(text["try"])


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(seconds))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``sublane`` command."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        _serve(_load_settings(host=args.host, port=args.port))
    elif args.command == "migrate":
        _migrate(_load_settings())
    elif args.command == "import-sqlite":
        _import_sqlite(_load_settings(), args.path)
    elif args.command == "backup":
        _backup(_load_settings(), args.dest)
    elif args.command == "restore":
        _restore(_load_settings(), args.src)
    elif args.command == "rotate-key":
        _rotate_key(_load_settings())
    elif args.command == "connect":
        _connect(args.client, args.url, args.model)
    elif args.admin_command == "reset-totp":
        _reset_totp(_load_settings(), args.username)
    else:
        _reset_password(_load_settings(), args.username)


if __name__ == "__main__":  # pragma: no cover
    main()
