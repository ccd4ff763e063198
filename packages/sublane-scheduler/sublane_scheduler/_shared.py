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

import math
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sublane_core import SubLaneError

#: How long a lease or ticket lives without renewal (``SUBLANE_LEASE_TTL``).
LEASE_TTL_S: Final = 30.0
RETRY_AFTER_S: Final = 2.0

_NOW = "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) "

# KEYS: per candidate its leases, its waiters (score: arrival), its waiters' expiries; ARGV: the
# TTL, the request id, then each candidate's limit. A waiter whose replica stopped renewing it is
# dropped; an account with an older live waiter than this request is skipped (FIFO, no barging).
_ACQUIRE = (
    _NOW
    + """
local ttl = tonumber(ARGV[1])
local rid = ARGV[2]
local n = #KEYS / 3
for i = 1, n do
  local leases, waiters, alive = KEYS[i], KEYS[n + i], KEYS[2 * n + i]
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', alive, '-inf', now)) do
    redis.call('ZREM', waiters, gone)
    redis.call('ZREM', alive, gone)
  end
  local head = redis.call('ZRANGE', waiters, 0, 0)[1]
  if (head == nil or head == rid) and redis.call('ZCARD', leases) < tonumber(ARGV[2 + i]) then
    redis.call('ZADD', leases, now + ttl, rid)
    redis.call('PEXPIRE', leases, ttl * 2)
    for j = 1, n do
      redis.call('ZREM', KEYS[n + j], rid)
      redis.call('ZREM', KEYS[2 * n + j], rid)
    end
    return i
  end
end
return 0
"""
)

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

_RENEW = (
    _NOW
    + """
if redis.call('ZSCORE', KEYS[1], ARGV[2]) == false then return 0 end
local ttl = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
"""
)

_RELEASE = """
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 then redis.call('PUBLISH', KEYS[2], ARGV[2]) end
return removed
"""

_LEAVE = "return redis.call('ZREM', KEYS[1], ARGV[1])"

_COUNT = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
"""
)

_ADMIT = (
    _NOW
    + """
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
)


def unavailable() -> SubLaneError:
    """SCALE-4: the shared limits cannot be read; nothing is admitted without them."""
    return SubLaneError("coordination_unavailable", retry_after=RETRY_AFTER_S)


class SharedLimits:
    """Account leases and member admission of one workspace, in Redis (one per replica)."""

    def __init__(self, redis: Redis, *, namespace: str = "sublane", ttl_s: float = LEASE_TTL_S) -> None:
        self._redis = redis
        self._prefix = f"{{{namespace}}}"
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self.releases_channel = f"{self._prefix}:released"
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self._count = redis.register_script(_COUNT)
        self._leave = redis.register_script(_LEAVE)
        self._enqueue = redis.register_script(_ENQUEUE)
        self._leave_queue = redis.register_script(_LEAVE_QUEUE)
        self._admit = redis.register_script(_ADMIT)

    def _lease_key(self, account_id: int) -> str:
        return f"{self._prefix}:lease:{account_id}"

    async def _call(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return await script(keys=list(keys), args=list(args))
        except RedisError:
            raise unavailable() from None

    # -- account leases ----------------------------------------------------------------------------

    def _wait_keys(self, account_ids: Sequence[int]) -> list[str]:
        waiters = [f"{self._prefix}:waiters:{account_id}" for account_id in account_ids]
        return waiters + [f"{self._prefix}:waiting:{account_id}" for account_id in account_ids]

    async def acquire(self, candidates: Sequence[tuple[int, int]], request_id: str) -> int | None:
        """Take a slot on the first of ``candidates`` — ``(account_id, max_concurrency)`` in the
        order to try — with room and no older waiter; its id, or ``None``. A waiter that gets a slot
        leaves every queue it was in."""
        if not candidates:
            return None
        accounts = [account_id for account_id, _ in candidates]
        keys = [self._lease_key(account_id) for account_id in accounts] + self._wait_keys(accounts)
        args = [self.ttl_ms, request_id, *(limit for _, limit in candidates)]
        index = int(await self._call(self._acquire, keys, args))
        return candidates[index - 1][0] if index else None

    async def renew(self, account_id: int, request_id: str) -> bool:
        """Move the lease's expiry on; ``False`` when it expired meanwhile (its slot may be taken)."""
        return bool(await self._call(self._renew, [self._lease_key(account_id)], [self.ttl_ms, request_id]))

    async def release(self, account_id: int, request_id: str) -> bool:
        """Give the slot back: ``True`` the first time, ``False`` later or after it expired."""
        keys = [self._lease_key(account_id), self.releases_channel]
        return bool(await self._call(self._release, keys, [request_id, account_id]))

    async def in_flight(self, account_id: int) -> int:
        """Live leases of the account, across replicas."""
        return int(await self._call(self._count, [self._lease_key(account_id)], []))

    # -- waiting (WAIT-3 across replicas) ------------------------------------------------------------

    async def enqueue(self, account_ids: Sequence[int], request_id: str) -> int:
        """Queue ``request_id`` on every account it may be served by; its place (arrivals are
        numbered across replicas). The replica renews it while it waits (:meth:`renew_waiting`); a
        waiter not renewed for a TTL is dropped (its replica died)."""
        keys = [f"{self._prefix}:arrivals", *self._wait_keys(account_ids)]
        return int(await self._call(self._enqueue, keys, [self.ttl_ms, request_id]))

    async def renew_waiting(self, account_ids: Sequence[int], request_id: str) -> None:
        keys = [f"{self._prefix}:arrivals", *self._wait_keys(account_ids)]
        await self._call(self._enqueue, keys, [self.ttl_ms, request_id])  # NX: the place is kept

    async def leave_queue(self, account_ids: Sequence[int], request_id: str) -> None:
        """The waiter gave up (timeout, cancellation): out of every queue."""
        await self._call(self._leave_queue, self._wait_keys(account_ids), [request_id])

    async def released_accounts(self) -> AsyncIterator[int]:
        """The accounts whose slots are released, on any replica, as they are (pub/sub)."""
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.releases_channel)
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    yield int(message["data"])
        except RedisError:
            raise unavailable() from None
        finally:
            await pubsub.aclose()

    # -- member admission --------------------------------------------------------------------------

    def _member_keys(self, user_id: int) -> list[str]:
        return [f"{self._prefix}:member:{user_id}", f"{self._prefix}:rpm:{user_id}"]

    async def admit(self, user_id: int, ticket_id: str, member_limit: int, rpm: int) -> None:
        """Count a model request of ``user_id`` (limits: 0 = unlimited), or refuse with a 429."""
        args = [self.ttl_ms, ticket_id, member_limit, rpm]
        verdict, wait_ms = await self._call(self._admit, self._member_keys(user_id), args)
        if int(verdict) == -1:
            raise SubLaneError("member_busy", retry_after=1)
        if int(verdict) == -2:
            raise SubLaneError("member_rate_limited", retry_after=max(1.0, math.ceil(int(wait_ms) / 1000)))

    async def renew_ticket(self, user_id: int, ticket_id: str) -> bool:
        key = self._member_keys(user_id)[0]
        return bool(await self._call(self._renew, [key], [self.ttl_ms, ticket_id]))

    async def leave(self, user_id: int, ticket_id: str) -> bool:
        """The request ended: its place in the member's concurrency is given back (once)."""
        return bool(await self._call(self._leave, [self._member_keys(user_id)[0]], [ticket_id]))

    async def member_in_use(self, user_id: int) -> int:
        return int(await self._call(self._count, [self._member_keys(user_id)[0]], []))
