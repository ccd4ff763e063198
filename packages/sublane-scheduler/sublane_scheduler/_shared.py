"""Limits shared by every replica through Redis (SCALE-2, SCALE-3): account leases, member
concurrency and member requests per minute, exact across replicas.

Each step is one Lua script, so no check-then-act spans two round trips:

- **acquire** tries the candidates in the order given (the rotation's) and takes a slot on the first
  with room under its ``max_concurrency``; a lease is a member of the account's sorted set whose
  score is its expiry (Redis's own clock: replicas' clocks never matter). Expired leases — of a
  replica that died (SIGKILL) — are dropped first, so no slot leaks for longer than the TTL.
- **renew** moves a held lease's expiry on (a running call renews it every TTL/3).
- **release** removes the lease and answers whether it was there: ``True`` exactly once, however
  many times a request releases, and also after the lease expired (then ``False``). A release
  publishes the account on a channel, so waiters on every replica look again at once.
- **enqueue** numbers a waiter's arrival across replicas and queues it on each account it may use;
  **acquire** never gives an account's slot to anyone but its oldest live waiter (WAIT-3's first
  come, first served, across replicas), and a waiter whose replica stopped renewing it is dropped.
- **admit** counts the member's concurrent tickets (expiring like leases) and the member's calls in
  the current UTC minute (TEAM-1's fixed windows, by Redis's clock), refusing with ``member_busy``
  or ``member_rate_limited`` and the seconds to the next minute.

Every key of a workspace carries one hash tag (``{namespace}``), so the scripts also run on a
Redis Cluster. A Redis that cannot be reached is ``coordination_unavailable`` (SCALE-4): a request
is never admitted without the shared limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sublane_core import SubLaneError
from sublane_scheduler._redis_link import Arg, LinkError, Script, ScriptLink

#: How long a lease or ticket lives without renewal (``SUBLANE_LEASE_TTL``).
LEASE_TTL_S: Final = 30.0
RETRY_AFTER_S: Final = 2.0

_NOW = "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) "

# KEYS: per candidate its leases, its leases of the request's model, its waiters (score: arrival),
# its waiters' expiries, then the group's rotation counter; ARGV: the TTL, the request id, whether to
# rotate, then per candidate its limit and its model limit (0: none). A waiter whose replica stopped
# renewing it is dropped; an account with an older live waiter than this request is skipped (FIFO,
# no barging). Rotating starts at the group's shared cursor (AFF-5 across replicas).
_ACQUIRE_BODY = """
local ttl = tonumber(ARGV[1])
local rid = ARGV[2]
local n = (#KEYS - 1) / 4
local start = 0
if ARGV[3] == '1' then start = (redis.call('INCR', KEYS[4 * n + 1]) - 1) % n end
for k = 0, n - 1 do
  local i = (start + k) % n + 1
  local leases, models, waiters, alive = KEYS[i], KEYS[n + i], KEYS[2 * n + i], KEYS[3 * n + i]
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', models, '-inf', now)
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', alive, '-inf', now)) do
    redis.call('ZREM', waiters, gone)
    redis.call('ZREM', alive, gone)
  end
  local head = redis.call('ZRANGE', waiters, 0, 0)[1]
  local limit = tonumber(ARGV[2 + 2 * i])
  local model_limit = tonumber(ARGV[3 + 2 * i])
  if (head == nil or head == rid) and redis.call('ZCARD', leases) < limit
     and (model_limit == 0 or redis.call('ZCARD', models) < model_limit) then
    redis.call('ZADD', leases, now + ttl, rid)
    redis.call('PEXPIRE', leases, ttl * 2)
    redis.call('ZADD', models, now + ttl, rid)
    redis.call('PEXPIRE', models, ttl * 2)
    for j = 1, n do
      redis.call('ZREM', KEYS[2 * n + j], rid)
      redis.call('ZREM', KEYS[3 * n + j], rid)
    end
    return i
  end
end
return 0
"""
_ACQUIRE = _NOW + _ACQUIRE_BODY

# KEYS: the arrival counter, then per account its waiters and their expiries; ARGV: TTL, request id.
_ENQUEUE = (
    _NOW
    + """
local n = (#KEYS - 1) / 2
local arrival = redis.call('INCR', KEYS[1])
for i = 1, n do
  redis.call('ZADD', KEYS[1 + i], 'NX', arrival, ARGV[2])
  redis.call('ZADD', KEYS[1 + n + i], now + tonumber(ARGV[1]), ARGV[2])
  redis.call('PEXPIRE', KEYS[1 + i], tonumber(ARGV[1]) * 4)
  redis.call('PEXPIRE', KEYS[1 + n + i], tonumber(ARGV[1]) * 4)
end
return arrival
"""
)

_LEAVE_QUEUE = """
local n = #KEYS / 2
for i = 1, n do
  redis.call('ZREM', KEYS[i], ARGV[1])
  redis.call('ZREM', KEYS[n + i], ARGV[1])
end
return 1
"""

# KEYS: the lease's sets (the account's, and the model's when given); ARGV: the TTL, the lease id.
_RENEW = (
    _NOW
    + """
if redis.call('ZSCORE', KEYS[1], ARGV[2]) == false then return 0 end
local ttl = tonumber(ARGV[1])
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now + ttl, ARGV[2])
  redis.call('PEXPIRE', key, ttl * 2)
end
return 1
"""
)

# KEYS: the account's leases, the channel, the model's leases, the account's waiters; ARGV: the
# lease id, the account id. Published only when someone waits for the account (issue #49: a message
# per call would reach every replica, each spending more on it than on the call's own Redis work).
# A waiter queues itself before it asks for a slot again, so a release it does not hear of comes
# before that ask, which then finds the slot free.
_RELEASE = """
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if removed == 1 and redis.call('ZCARD', KEYS[4]) > 0 then redis.call('PUBLISH', KEYS[2], ARGV[2]) end
return removed
"""

_LEAVE = "return redis.call('ZREM', KEYS[1], ARGV[1])"

# KEYS: the version counter, the events channel; ARGV: the event. Every event carries the version it
# made, so a replica that missed one (a dropped subscription) sees a gap and reloads everything.
_PUBLISH = """
local version = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', KEYS[2], version .. ' ' .. ARGV[1])
return version
"""

_COUNT = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
"""
)

_ADMIT_BODY = """
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[3])
local rpm = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return {-1, 0} end
local minute = math.floor(now / 60000)
if rpm > 0 then
  local calls = 0
  if tonumber(redis.call('HGET', KEYS[2], 'minute') or '-1') == minute then
    calls = tonumber(redis.call('HGET', KEYS[2], 'calls') or '0')
  end
  if calls >= rpm then return {-2, (minute + 1) * 60000 - now} end
  redis.call('HSET', KEYS[2], 'minute', minute, 'calls', calls + 1)
  redis.call('PEXPIRE', KEYS[2], 120000)
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return {1, 0}
"""
_ADMIT = _NOW + _ADMIT_BODY

# A member's admission and the request's first slot in one round trip (issue #49): KEYS and ARGV
# are the admission's (two keys, four arguments), then the acquire's. Refused: ``{verdict, wait,
# 0}`` and nothing taken; admitted: ``{1, 0, index}`` (0: no slot, the ticket is held all the same).
_ADMIT_ACQUIRE = (
    _NOW
    + "local function admit(KEYS, ARGV)"
    + _ADMIT_BODY
    + "end\nlocal function acquire(KEYS, ARGV)"
    + _ACQUIRE_BODY
    + """end
local verdict = admit({KEYS[1], KEYS[2]}, {ARGV[1], ARGV[2], ARGV[3], ARGV[4]})
if verdict[1] ~= 1 then return {verdict[1], verdict[2], 0} end
return {1, 0, acquire({unpack(KEYS, 3)}, {unpack(ARGV, 5)})}
"""
)


# KEYS: the account's read marker, the running reads; ARGV: the read id, its life (ms), the most at
# once. 1: read now; 0: the account is read elsewhere now (coalesced); -1: all reads are running.
_BEGIN_READ = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"""
)

_END_READ = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return redis.call('ZREM', KEYS[2], ARGV[1])
"""


ACQUIRE: Final = Script(_ACQUIRE)
ENQUEUE: Final = Script(_ENQUEUE)
LEAVE_QUEUE: Final = Script(_LEAVE_QUEUE, gives_back=True)
RENEW: Final = Script(_RENEW)
RELEASE: Final = Script(_RELEASE, gives_back=True)
LEAVE: Final = Script(_LEAVE, gives_back=True)
PUBLISH: Final = Script(_PUBLISH)
COUNT: Final = Script(_COUNT)
ADMIT: Final = Script(_ADMIT)
ADMIT_ACQUIRE: Final = Script(_ADMIT_ACQUIRE)
BEGIN_READ: Final = Script(_BEGIN_READ)
END_READ: Final = Script(_END_READ, gives_back=True)


def unavailable() -> SubLaneError:
    """SCALE-4: the shared limits cannot be read; nothing is admitted without them."""
    return SubLaneError("coordination_unavailable", retry_after=RETRY_AFTER_S)


class SharedLimits:
    """Account leases and member admission of one workspace, in Redis (one per replica)."""

    def __init__(self, redis: Redis, *, namespace: str = "sublane", ttl_s: float = LEASE_TTL_S) -> None:
        self.redis = redis  # pub/sub only: every script and command goes over the lean link
        self.link = ScriptLink(redis)
        self.prefix = f"{{{namespace}}}"  # one hash tag: every key of a workspace on one cluster slot
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self.releases_channel = f"{self.prefix}:released"
        self.events_channel = f"{self.prefix}:events"
        self._version_key = f"{self.prefix}:version"

    async def aclose(self) -> None:
        """Close the lean link (the redis-py client is its owner's to close)."""
        await self.link.aclose()

    def _lease_key(self, account_id: int) -> str:
        return f"{self.prefix}:lease:{account_id}"

    async def _call(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        try:
            return await self.link.run(script, keys, args)
        except LinkError:
            raise unavailable() from None

    async def _call_all(self, calls: Sequence[tuple[Script, Sequence[str], Sequence[Arg]]]) -> list[Any]:
        """Several scripts in one write and one round trip (a pipeline, not a transaction)."""
        if not calls:
            return []
        try:
            return await self.link.run_all(calls)
        except LinkError:
            raise unavailable() from None

    # -- account leases ----------------------------------------------------------------------------

    def _wait_keys(self, account_ids: Sequence[int]) -> list[str]:
        waiters = [f"{self.prefix}:waiters:{account_id}" for account_id in account_ids]
        return waiters + [f"{self.prefix}:waiting:{account_id}" for account_id in account_ids]

    def _release_keys(self, account_id: int, model: str) -> list[str]:
        return [
            self._lease_key(account_id),
            self.releases_channel,
            self._model_key(account_id, model),
            f"{self.prefix}:waiters:{account_id}",
        ]

    def _model_key(self, account_id: int, model: str) -> str:
        return f"{self.prefix}:model-lease:{account_id}:{model}"

    async def acquire(
        self,
        candidates: Sequence[tuple[int, int]],
        request_id: str,
        *,
        model: str = "",
        model_limits: Sequence[int] | None = None,
        rotation: str | None = None,
    ) -> int | None:
        """Take a slot on the first of ``candidates`` — ``(account_id, max_concurrency)`` in the
        order to try — with room and no older waiter; its id, or ``None``. A waiter that gets a slot
        leaves every queue it was in.

        ``model_limits`` caps the leases of ``model`` per candidate as well (0: no cap; a recovery
        probe of one model is a cap of 1, MCOOL-3). With ``rotation`` (a group's name for its
        cursor) the candidates are tried from the group's shared cursor on, which moves by one per
        call, so new selections rotate across replicas as in one process (AFF-5)."""
        if not candidates:
            return None
        keys, args = self._acquire_call(candidates, request_id, model, model_limits, rotation)
        index = int(await self._call(ACQUIRE, keys, args))
        return candidates[index - 1][0] if index else None

    def _acquire_call(
        self,
        candidates: Sequence[tuple[int, int]],
        request_id: str,
        model: str,
        model_limits: Sequence[int] | None,
        rotation: str | None,
    ) -> tuple[list[str], list[Arg]]:
        accounts = [account_id for account_id, _ in candidates]
        caps = list(model_limits) if model_limits is not None else [0] * len(accounts)
        keys = [self._lease_key(account_id) for account_id in accounts]
        keys += [self._model_key(account_id, model) for account_id in accounts]
        keys += self._wait_keys(accounts)
        keys.append(f"{self.prefix}:rotation:{rotation or ''}")
        args: list[Arg] = [self.ttl_ms, request_id, "1" if rotation else "0"]
        for (_, limit), cap in zip(candidates, caps, strict=True):
            args += [limit, cap]
        return keys, args

    async def admit_and_acquire(
        self,
        admission: tuple[int, str, int, int],
        candidates: Sequence[tuple[int, int]],
        request_id: str,
        *,
        model: str = "",
        model_limits: Sequence[int] | None = None,
        rotation: str | None = None,
    ) -> int | None:
        """:meth:`admit` then :meth:`acquire` in one round trip: ``admission`` is ``(user_id,
        ticket_id, member_limit, rpm)``. A refusal raises as :meth:`admit` does and takes no slot;
        once admitted, the ticket is held whether or not a slot was free (``None``)."""
        assert candidates, "an empty candidate list has nothing to acquire: use admit"
        user_id, ticket_id, member_limit, rpm = admission
        keys, args = self._acquire_call(candidates, request_id, model, model_limits, rotation)
        admit_args: list[Arg] = [self.ttl_ms, ticket_id, member_limit, rpm]
        verdict, wait_ms, index = await self._call(
            ADMIT_ACQUIRE, [*self._member_keys(user_id), *keys], [*admit_args, *args]
        )
        _raise_refusal(int(verdict), int(wait_ms))
        return candidates[int(index) - 1][0] if int(index) else None

    async def renew(self, account_id: int, request_id: str, model: str = "") -> bool:
        """Move the lease's expiry on; ``False`` when it expired meanwhile (its slot may be taken)."""
        keys = [self._lease_key(account_id), self._model_key(account_id, model)]
        return bool(await self._call(RENEW, keys, [self.ttl_ms, request_id]))

    async def renew_many(
        self, leases: Sequence[tuple[int, str, str]], tickets: Sequence[tuple[int, str]]
    ) -> None:
        """Renew ``(account_id, lease_id, model)`` leases and ``(user_id, ticket_id)`` tickets in one
        round trip (a replica renews everything it holds every TTL/3)."""
        calls: list[tuple[Script, Sequence[str], Sequence[Arg]]] = [
            (
                RENEW,
                [self._lease_key(account_id), self._model_key(account_id, model)],
                [self.ttl_ms, lease_id],
            )
            for account_id, lease_id, model in leases
        ]
        calls += [
            (RENEW, self._member_keys(user_id)[:1], [self.ttl_ms, ticket_id])
            for user_id, ticket_id in tickets
        ]
        await self._call_all(calls)

    async def release(self, account_id: int, request_id: str, model: str = "") -> bool:
        """Give the slot back: ``True`` the first time, ``False`` later or after it expired."""
        return bool(
            await self._call(RELEASE, self._release_keys(account_id, model), [request_id, account_id])
        )

    async def finish(
        self, leases: Sequence[tuple[int, str, str]], tickets: Sequence[tuple[int, str]]
    ) -> None:
        """Release ``(account_id, lease_id, model)`` leases and leave ``(user_id, ticket_id)``
        member tickets in one round trip (what ends together — a call's slot and its ticket — is
        given back together)."""
        calls: list[tuple[Script, Sequence[str], Sequence[Arg]]] = [
            (
                RELEASE,
                self._release_keys(account_id, model),
                [lease_id, account_id],
            )
            for account_id, lease_id, model in leases
        ]
        calls += [(LEAVE, self._member_keys(user_id)[:1], [ticket_id]) for user_id, ticket_id in tickets]
        await self._call_all(calls)

    async def counts(self, account_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """Live leases and live waiters of each account, over every replica, in one round trip."""
        calls: list[tuple[Script, Sequence[str], Sequence[Arg]]] = []
        for account_id in account_ids:
            calls.append((COUNT, [self._lease_key(account_id)], []))
            calls.append((COUNT, [f"{self.prefix}:waiting:{account_id}"], []))
        answers = await self._call_all(calls)
        return {
            account_id: (int(answers[2 * index]), int(answers[2 * index + 1]))
            for index, account_id in enumerate(account_ids)
        }

    async def in_flight(self, account_id: int) -> int:
        """Live leases of the account, across replicas."""
        return int(await self._call(COUNT, [self._lease_key(account_id)], []))

    # -- waiting (WAIT-3 across replicas) ------------------------------------------------------------

    async def enqueue(self, account_ids: Sequence[int], request_id: str) -> int:
        """Queue ``request_id`` on every account it may be served by; its place (arrivals are
        numbered across replicas). The replica renews it while it waits (:meth:`renew_waiting`); a
        waiter not renewed for a TTL is dropped (its replica died)."""
        keys = [f"{self.prefix}:arrivals", *self._wait_keys(account_ids)]
        return int(await self._call(ENQUEUE, keys, [self.ttl_ms, request_id]))

    async def renew_waiting(self, account_ids: Sequence[int], request_id: str) -> None:
        keys = [f"{self.prefix}:arrivals", *self._wait_keys(account_ids)]
        await self._call(ENQUEUE, keys, [self.ttl_ms, request_id])  # NX: the place is kept

    async def leave_queue(self, account_ids: Sequence[int], request_id: str) -> None:
        """The waiter gave up (timeout, cancellation): out of every queue."""
        await self._call(LEAVE_QUEUE, self._wait_keys(account_ids), [request_id])

    async def released_accounts(self) -> AsyncIterator[int]:
        """The accounts whose slots are released, on any replica, as they are (pub/sub)."""
        async for channel, data in self.listen():
            if channel == self.releases_channel:
                yield int(data)

    async def listen(self) -> AsyncIterator[tuple[str, str]]:
        """``(channel, data)`` of every release and event, from any replica, as they happen."""
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        try:
            with cancellation_kept():
                await pubsub.subscribe(self.releases_channel, self.events_channel)
            asked = _cancellations()
            async for message in pubsub.listen():
                _keep_cancellation(asked)
                if message.get("type") == "message":
                    yield _text(message["channel"]), _text(message["data"])
        except RedisError:
            raise unavailable() from None
        finally:
            await pubsub.aclose()

    # -- events between replicas (SCALE-2: a change on one replica reaches the others) ----------------

    async def publish(self, event: str) -> int:
        """Tell every replica (itself included) ``event``; the version it made."""
        keys = [self._version_key, self.events_channel]
        return int(await self._call(PUBLISH, keys, [event]))

    async def version(self) -> int:
        """The version of the last event published (a replica compares it with the last it heard)."""
        try:
            value = await self.link.execute(b"GET", self._version_key)
        except LinkError:
            raise unavailable() from None
        return int(value or 0)

    async def ping(self) -> bool:
        try:
            return bool(await self.link.execute(b"PING") == b"PONG")
        except LinkError:
            return False

    # -- quota reads (QUOTA-1 across replicas) -------------------------------------------------------

    def _read_keys(self, account_id: int) -> list[str]:
        return [f"{self.prefix}:quota-read:{account_id}", f"{self.prefix}:quota-reads"]

    async def begin_quota_read(self, account_id: int, read_id: str, *, most: int, life_s: float) -> int:
        """May this replica read the account's quota now? 1 yes; 0 another replica reads it now
        (its observation will be heard); -1 ``most`` reads run already over the replicas."""
        args: list[Arg] = [read_id, max(1, round(life_s * 1000)), most]
        return int(await self._call(BEGIN_READ, self._read_keys(account_id), args))

    async def end_quota_read(self, account_id: int, read_id: str) -> None:
        await self._call(END_READ, self._read_keys(account_id), [read_id])

    # -- member admission --------------------------------------------------------------------------

    def _member_keys(self, user_id: int) -> list[str]:
        return [f"{self.prefix}:member:{user_id}", f"{self.prefix}:rpm:{user_id}"]

    async def admit(self, user_id: int, ticket_id: str, member_limit: int, rpm: int) -> None:
        """Count a model request of ``user_id`` (limits: 0 = unlimited), or refuse with a 429."""
        args: list[Arg] = [self.ttl_ms, ticket_id, member_limit, rpm]
        verdict, wait_ms = await self._call(ADMIT, self._member_keys(user_id), args)
        _raise_refusal(int(verdict), int(wait_ms))

    async def renew_ticket(self, user_id: int, ticket_id: str) -> bool:
        key = self._member_keys(user_id)[0]
        return bool(await self._call(RENEW, [key], [self.ttl_ms, ticket_id]))

    async def leave(self, user_id: int, ticket_id: str) -> bool:
        """The request ended: its place in the member's concurrency is given back (once)."""
        return bool(await self._call(LEAVE, [self._member_keys(user_id)[0]], [ticket_id]))

    async def member_in_use(self, user_id: int) -> int:
        return int(await self._call(COUNT, [self._member_keys(user_id)[0]], []))


def _raise_refusal(verdict: int, wait_ms: int) -> None:
    """The admission script's refusals as errors (TEAM-1): ``-1`` busy, ``-2`` rate limited."""
    if verdict == -1:
        raise SubLaneError("member_busy", retry_after=1)
    if verdict == -2:
        raise SubLaneError("member_rate_limited", retry_after=max(1.0, math.ceil(wait_ms / 1000)))


@contextmanager
def cancellation_kept() -> Iterator[None]:
    """Raise, when the block ends normally, a cancellation the current task was asked for meanwhile.

    On Python 3.11, ``asyncio.wait_for`` — which redis-py's asyncio client puts around socket writes
    when a socket timeout is set — drops a cancellation that arrives as the operation completes
    (fixed in 3.12). Measured here: a task cancelled during a ``GET`` in a loop lost the cancellation
    in about two of three tries. A lost cancellation keeps a background loop running after
    shutdown and a request whose client left going on; ``Task.cancelling()`` still counts the
    request, so it is raised here (a cancellation inside the block that an inner timeout took back
    leaves the count as it was)."""
    asked = _cancellations()
    yield
    _keep_cancellation(asked)


def _cancellations() -> int:
    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0


def _keep_cancellation(asked: int) -> None:
    """Raise the cancellation asked for since the count was ``asked``, if it was lost."""
    if _cancellations() > asked:
        raise asyncio.CancelledError


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


# KEYS: the lock, the account's fence counter; ARGV: the holder, the lock's life (ms). The token is
# only made when the lock is taken, so every holder's token is larger than any before it.
_LOCK = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
"""

# KEYS: the lock; ARGV: the holder, the lock's life (ms): still held? then it lives on.
_STILL_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


LOCK: Final = Script(_LOCK)
STILL_HELD: Final = Script(_STILL_HELD)
UNLOCK: Final = Script(_UNLOCK, gives_back=True)


class Fence:
    """A held refresh lock and its fencing token."""

    def __init__(self, locks: RefreshLocks, key: str, holder: str, token: int) -> None:
        self._locks = locks
        self._key = key
        self._holder = holder
        self.token = token

    async def valid(self) -> bool:
        """Still held (and kept for another lock life): the refresh token may be spent now."""
        locks = self._locks
        return bool(await locks.limits._call(STILL_HELD, [self._key], [self._holder, locks.life_ms]))


class RefreshLocks:
    """One credential refresh per account at a time over every replica (SCALE-2, CRED-1), with a
    fencing token per holder: the database refuses a refresh stored under an older token than the
    last one stored, so a replica that stalled past its lock never overwrites newer credentials,
    and it asks :meth:`Fence.valid` right before spending the refresh token."""

    def __init__(self, limits: SharedLimits, *, life_s: float = 60.0, poll_s: float = 0.05) -> None:
        self.limits = limits
        self.life_ms = max(1, round(life_s * 1000))
        self.poll_s = poll_s
        self._holders = itertools.count(1)
        self._replica = secrets.token_hex(6)

    @asynccontextmanager
    async def hold(self, account_id: int) -> AsyncIterator[Fence]:
        """Wait for the account's lock (another replica refreshing it), hold it for the block."""
        key = f"{self.limits.prefix}:refresh:{account_id}"
        holder = f"{self._replica}:{next(self._holders)}"
        keys = [key, f"{self.limits.prefix}:refresh-fence:{account_id}"]
        while True:
            try:
                token = int(await self.limits._call(LOCK, keys, [holder, self.life_ms]))
            except asyncio.CancelledError:  # taken in Redis, perhaps, with the answer lost: let it go
                with contextlib.suppress(SubLaneError):
                    await self.limits._call(UNLOCK, [key], [holder])
                raise
            if token:
                break
            await asyncio.sleep(self.poll_s)
        try:
            yield Fence(self, key, holder, token)
        finally:
            with contextlib.suppress(SubLaneError):  # out of reach: the lock ends with its life
                await self.limits._call(UNLOCK, [key], [holder])
