"""CRED-6 / CRED-10: an older refresh never undoes a re-authorization.

A stateful model (hypothesis ``RuleBasedStateMachine``) interleaves credential reads that refresh,
refresh outcomes (success, a transient failure, ``invalid_grant``) delivered in any order, clock
jumps and re-authorizations (new credentials, the lifecycle revision advanced, the vault told to
forget, as ``POST /api/accounts/{id}/credentials`` does). After every step the newest login wins:
the database holds its tokens, it is marked ``reauth_required`` only when a refresh *of its own*
tokens was refused, and every read that began after it hands out its tokens. The vault, the
database (a real SQLite file) and the threads it writes from are the real ones; only the token
endpoint is scripted.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from sqlmodel import Session

from sublane_core import (
    AUTH_OK,
    AUTH_REAUTH_REQUIRED,
    Account,
    CredentialCipher,
    FakeClock,
    SubLaneError,
    create_db_engine,
    upgrade_database,
)
from sublane_providers import Credentials, CredentialVault, RefreshedCredentials, RefreshFailed

PROVIDER = "scripted"
_TEMPLATE: list[Path] = []


def _template() -> Path:
    if not _TEMPLATE:
        path = Path(tempfile.mkdtemp(prefix="sublane-vault-")) / "template.db"
        engine = create_db_engine(f"sqlite:///{path}")
        upgrade_database(engine)
        engine.dispose()
        _TEMPLATE.append(path)
    return _TEMPLATE[0]


def login_of(bundle: Mapping[str, Any]) -> int:
    """Which login a bundle's tokens come from (``at-<login>-<n>``)."""
    return int(str(bundle["access_token"]).split("-")[1])


class ScriptedTokenEndpoint:
    """Each refresh waits until the test delivers its outcome."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.pending: list[tuple[int, asyncio.Future[RefreshedCredentials]]] = []
        self._tokens = itertools.count(1)

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        future: asyncio.Future[RefreshedCredentials] = asyncio.get_running_loop().create_future()
        self.pending.append((login_of(bundle), future))
        return await future

    def deliver(self, index: int, outcome: str) -> int:
        """Resolve the ``index``-th pending refresh; the login its input belonged to."""
        login, future = self.pending.pop(index)
        if outcome == "ok":
            token = next(self._tokens)
            bundle = {"access_token": f"at-{login}-{token}", "refresh_token": f"rt-{login}-{token}"}
            future.set_result(RefreshedCredentials(bundle, self.clock.time() + 3600))
        elif outcome == "invalid_grant":
            future.set_exception(RefreshFailed("invalid_grant", permanent=True))
        else:
            future.set_exception(RefreshFailed("http_500", permanent=False))
        return login


class VaultModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="sublane-vault-"))
        shutil.copyfile(_template(), self.folder / "sublane.db")
        self.engine = create_db_engine(f"sqlite:///{self.folder / 'sublane.db'}")
        self.clock = FakeClock()
        self.cipher = CredentialCipher(b"k" * 32)
        self.endpoint = ScriptedTokenEndpoint(self.clock)
        self.vault = CredentialVault(
            self.engine, self.cipher, self.clock, {PROVIDER: self.endpoint}, fallback_providers=frozenset()
        )
        self.loop = asyncio.new_event_loop()
        self.login = 1
        self.killed: set[int] = set()  # logins whose own refresh got invalid_grant
        self.tasks: list[tuple[int, asyncio.Task[Credentials]]] = []  # (login when it began, read)
        now = self.clock.time()
        with Session(self.engine) as db:
            account = Account(
                provider=PROVIDER,
                name="a",
                credentials=self.cipher.encrypt({"access_token": "at-1-0", "refresh_token": "rt-1-0"}),
                credentials_expires_at=now - 10,  # due: the first read refreshes
                created_at=now,
                updated_at=now,
            )
            db.add(account)
            db.commit()
            assert account.id is not None
            self.account_id = account.id

    def teardown(self) -> None:
        for _login, task in self.tasks:
            task.cancel()
        for _login, future in self.endpoint.pending:
            future.cancel()
        self.loop.run_until_complete(asyncio.sleep(0.01))
        self.loop.close()
        self.engine.dispose()
        shutil.rmtree(self.folder, ignore_errors=True)

    def settle(self) -> None:
        """Run the loop until nothing moves any more (reads wait on the endpoint or have ended)."""

        async def quiet() -> None:
            calm, before = 0, None
            for _ in range(400):
                await asyncio.sleep(0.002)
                now = (len(self.endpoint.pending), tuple(task.done() for _, task in self.tasks))
                calm = calm + 1 if now == before else 0
                before = now
                if calm >= 5:
                    return

        self.loop.run_until_complete(quiet())

    def stored(self) -> Account:
        with Session(self.engine) as db:
            account = db.get(Account, self.account_id)
            assert account is not None
            return account

    @rule()
    def read(self) -> None:
        task = self.loop.create_task(self.vault.get(self.account_id, PROVIDER))
        self.tasks.append((self.login, task))
        self.settle()

    @precondition(lambda self: bool(self.endpoint.pending))
    @rule(data=st.data(), outcome=st.sampled_from(["ok", "ok", "transient", "invalid_grant"]))
    def deliver(self, data: st.DataObject, outcome: str) -> None:
        index = data.draw(st.integers(0, len(self.endpoint.pending) - 1))
        login = self.endpoint.deliver(index, outcome)
        if outcome == "invalid_grant":
            self.killed.add(login)
        self.settle()

    @rule(seconds=st.sampled_from([10, 400, 4000]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)  # past the backoff, or past the tokens' expiry

    @rule(due=st.booleans())
    def reauthorize(self, due: bool) -> None:
        """``POST /api/accounts/{id}/credentials``: a new login's file, the revision advanced."""
        self.login += 1
        now = self.clock.time()
        with Session(self.engine) as db:
            account = db.get(Account, self.account_id)
            assert account is not None
            bundle = {"access_token": f"at-{self.login}-0", "refresh_token": f"rt-{self.login}-0"}
            account.credentials = self.cipher.encrypt(bundle)
            account.credentials_expires_at = now - 10 if due else now + 3600
            account.credentials_rejected_at = None
            account.auth_state, account.auth_error = AUTH_OK, None
            account.lifecycle_revision += 1
            db.add(account)
            db.commit()
        self.vault.forget(self.account_id)  # what the account_changed signal does
        self.settle()

    @invariant()
    def the_newest_login_is_stored(self) -> None:
        account = self.stored()
        assert login_of(self.cipher.decrypt(account.credentials)) == self.login

    @invariant()
    def only_its_own_refresh_can_require_reauthorization(self) -> None:
        account = self.stored()
        if account.auth_state == AUTH_REAUTH_REQUIRED:
            assert self.login in self.killed
        if self.vault.needs_reauth(self.account_id):
            assert self.login in self.killed

    @invariant()
    def reads_of_the_newest_login_get_its_tokens(self) -> None:
        for login, task in self.tasks:
            if login != self.login or not task.done() or task.cancelled():
                continue
            error = task.exception()
            if error is None:
                assert login_of(task.result().bundle) == self.login
            else:
                assert isinstance(error, SubLaneError), error
                assert error.code in ("account_refresh_failed", "reauth_required"), error.code
                if error.code == "reauth_required":
                    assert self.login in self.killed


class TestCred10TheNewestLoginAlwaysWins(VaultModel.TestCase):  # type: ignore[name-defined,misc]
    def setUp(self) -> None:
        # Hypothesis reads this module's source (ast.parse) before it runs the model. Earlier tests'
        # garbage with finalizers (closed loops' sockets, TLS transports), collected during that
        # parse, sets off CPython 3.11.7's "AST constructor recursion depth mismatch": collect it first.
        gc.collect()


TestCred10TheNewestLoginAlwaysWins.settings = settings(
    max_examples=30,
    stateful_step_count=14,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_cred_10_a_refresh_that_began_before_a_reauthorization_writes_nothing() -> None:
    """The issue's two cases by hand: the old refresh fails with invalid_grant, or succeeds."""
    for outcome in ("invalid_grant", "ok"):
        model = VaultModel()
        try:
            model.read()  # login 1's refresh is in flight
            assert len(model.endpoint.pending) == 1
            model.reauthorize(due=False)  # login 2, fresh
            model.endpoint.deliver(0, outcome)
            if outcome == "invalid_grant":
                model.killed.add(1)
            model.settle()
            account = model.stored()
            assert login_of(model.cipher.decrypt(account.credentials)) == 2
            assert account.auth_state == AUTH_OK and not model.vault.needs_reauth(model.account_id)
            model.read()
            _login, task = model.tasks[-1]
            assert task.done() and login_of(task.result().bundle) == 2
        finally:
            model.teardown()
