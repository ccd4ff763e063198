"""First start: the ``default`` group, the first admin, or a one-time set-up link."""

from __future__ import annotations

import logging

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from sublane_core import DEFAULT_GROUP_NAME, ROLE_ADMIN, GroupMember, ResourceGroup, User, new_secret_token
from sublane_gateway._passwords import hash_password
from sublane_gateway._state import GatewayState

_log = logging.getLogger("sublane.gateway")


def default_group(db: Session, now: float) -> ResourceGroup:
    """The group named ``default``, created when missing. The caller commits."""
    group = db.exec(select(ResourceGroup).where(col(ResourceGroup.name) == DEFAULT_GROUP_NAME)).first()
    if group is None:
        group = ResourceGroup(name=DEFAULT_GROUP_NAME, created_at=now, updated_at=now)
        db.add(group)
        db.flush()
    return group


def create_user(
    db: Session,
    state: GatewayState,
    *,
    username: str,
    password: str,
    role: str,
    enabled: bool = True,
    member_concurrency: int | None = None,
    rpm: int = 0,
    group_ids: list[int] | None = None,
) -> User:
    """Add a user (and their group memberships; default: the ``default`` group). The caller commits."""
    now = state.clock.time()
    user = User(
        username=username,
        password_hash=hash_password(password),
        role=role,
        enabled=enabled,
        member_concurrency=(
            state.settings.member_concurrency_default if member_concurrency is None else member_concurrency
        ),
        rpm=rpm,
        created_at=now,
        updated_at=now,
    )
    db.add(user)
    db.flush()
    assert user.id is not None
    for group_id in group_ids if group_ids is not None else [default_group(db, now).id]:
        assert group_id is not None
        db.add(GroupMember(group_id=group_id, user_id=user.id))
    db.flush()
    return user


def bootstrap(state: GatewayState) -> None:
    """Make sure the ``default`` group exists and there is a way to sign in as an admin.

    With an empty user table, ``SUBLANE_ADMIN_USERNAME``/``SUBLANE_ADMIN_PASSWORD`` create the first
    admin; without them a one-time set-up link is printed (and kept in memory only).
    """
    settings = state.settings
    with Session(state.engine) as db:
        try:
            default_group(db, state.clock.time())
            db.commit()
        except IntegrityError:  # another replica made it at the same moment (SCALE-6)
            db.rollback()
        if db.exec(select(func.count()).select_from(User)).one() > 0:
            return
        if settings.admin_username and settings.admin_password:
            try:
                create_user(
                    db,
                    state,
                    username=settings.admin_username,
                    password=settings.admin_password.get_secret_value(),
                    role=ROLE_ADMIN,
                )
                db.commit()
            except IntegrityError:  # another process bootstrapped at the same moment
                db.rollback()
            else:
                _log.info("created the first admin %r from SUBLANE_ADMIN_USERNAME", settings.admin_username)
            return
    state.setup_token = new_secret_token(24)
    host = "localhost" if settings.host in ("0.0.0.0", "::") else settings.host  # noqa: S104
    print(
        "\nSubLane has no admin yet. Create one within this run at\n"
        f"  http://{host}:{settings.port}/setup#token={state.setup_token}\n"
        "or set SUBLANE_ADMIN_USERNAME and SUBLANE_ADMIN_PASSWORD and restart.\n",
        flush=True,
    )
