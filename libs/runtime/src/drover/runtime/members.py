"""The API servers as Nomad's server members (`/v1/agent/members`, `/v1/status/peers`): each
API process puts its member record into the JetStream key-value bucket `drover-members` every
ANNOUNCE_EVERY seconds, under its own ID, and marks it `left` when it stops (`put`). Nomad's servers
find each other by gossip (Serf); Drover's share NATS, so the bucket is their gossip.

A record not renewed for FAILED_AFTER seconds is `failed` (its process died, or lost NATS), as
Serf marks a member it stops hearing from; the bucket forgets any record KEEP_FOR after its last
write, as Serf reaps failed and left members after a while."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import NoKeysError
from nats.js.kv import KeyValue

from drover.runtime.bus import bucket_replicas

BUCKET = "drover-members"
ANNOUNCE_EVERY = 2.0
FAILED_AFTER = 10.0
KEEP_FOR = 3600.0
STATUS_ALIVE, STATUS_FAILED, STATUS_LEFT = "alive", "failed", "left"


def member_status(record: dict[str, Any], now: float) -> str:
    """A record's status at `now`: as it says (left), or failed once it is not renewed."""
    if record.get("Status") == STATUS_LEFT:
        return STATUS_LEFT
    return STATUS_ALIVE if now - float(record.get("Time", 0)) < FAILED_AFTER else STATUS_FAILED


async def bucket(js: JetStreamContext) -> KeyValue:
    """The members' bucket, created if it is not there yet (in memory: a restarted NATS loses
    it for ANNOUNCE_EVERY seconds at most)."""
    try:
        return await js.key_value(BUCKET)
    except Exception:
        return await js.create_key_value(
            KeyValueConfig(
                bucket=BUCKET,
                history=1,
                ttl=KEEP_FOR,
                storage=StorageType.MEMORY,
                replicas=bucket_replicas(js),
            )
        )


async def put(js: JetStreamContext, key: str, record: dict[str, Any]) -> None:
    kv = await bucket(js)
    await kv.put(key, json.dumps({**record, "Time": time.time()}).encode())


async def read_all(js: JetStreamContext) -> dict[str, dict[str, Any]]:
    """Every record the bucket holds, by key, its Status as of now."""
    kv = await bucket(js)
    try:
        keys = await kv.keys()
    except NoKeysError:
        return {}
    now = time.time()
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(keys):
        with contextlib.suppress(Exception):
            entry = await kv.get(key)
            if entry.value:
                record = json.loads(entry.value)
                out[key] = {**record, "Status": member_status(record, now)}
    return out


async def remove(js: JetStreamContext, key: str, record: dict[str, Any], *, prune: bool) -> None:
    """A failed member let go (Nomad's force-leave): marked left, or with `prune` forgotten."""
    if prune:
        kv = await bucket(js)
        await kv.delete(key)
    else:
        await put(js, key, {**record, "Status": STATUS_LEFT})
