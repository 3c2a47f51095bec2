"""NATS JetStream wiring: connection, the streams, subjects and headers every service uses.

- EVENTS: every committed event, published by the relay in log order. Subject
  `drover.events.<Type>`; header `Drover-Position` is the log position and `Nats-Msg-Id` the
  same, so a re-publish is dropped by the server's duplicate window.
- EVALS: ready evals, a work queue the broker fills and workers pull from (one delivery each,
  acked when the eval's outcome is committed; unacked work is redelivered after the ack wait).
  Subject `drover.evals.ready`, consumer `workers`; with worker lanes, large evals go to
  `drover.evals.large`, consumer `workers-large`. An eval handed out past the delivery limit goes
  to `drover.evals.failed` (Nomad's failed queue), consumer `reaper`: the leader's.
- Plans go to the plan applier by request/reply on `drover.plan.submit`.
- Client heartbeats go from the API to the leader's heartbeater on core NATS `drover.heartbeat`
  (JSON {"NodeIDs": [...], "TTLs": [ns, ...]}): they are not state changes and are not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError

from drover.runtime.settings import NatsCredentials

EVENTS_STREAM = "EVENTS"
EVENTS_SUBJECT_PREFIX = "drover.events."
EVALS_STREAM = "EVALS"
EVALS_SUBJECT = "drover.evals.ready"
EVALS_LARGE_SUBJECT = "drover.evals.large"
EVALS_FAILED_SUBJECT = "drover.evals.failed"
PLAN_SUBJECT = "drover.plan.submit"
HEARTBEAT_SUBJECT = "drover.heartbeat"
POSITION_HEADER = "Drover-Position"
LOG_HEADER = "Drover-Log"
MSG_ID_HEADER = "Nats-Msg-Id"
# On a message sent without its body ("log"): the event is too large for a NATS message, and a
# consumer reads it from the log at the message's position.
BODY_HEADER = "Drover-Body"
BODY_IN_LOG = "log"


def server_urls(url: str) -> list[str]:
    """The servers of a NATS URL: one, or a cluster's as a comma-separated list (as
    DROVER_NATS_URL gives them)."""
    return [u.strip() for u in url.split(",") if u.strip()]


def stream_replicas(nc: Client) -> int:
    """How many copies each stream and bucket keeps: 3 on a cluster of three or more servers
    (those given and those the cluster told of), so the loss of one loses nothing; 1 on one."""
    return 3 if len(nc.servers) >= 3 else 1


def bucket_replicas(js: JetStreamContext) -> int:
    """`stream_replicas` of the connection a JetStream context was made from."""
    return stream_replicas(js._nc)


async def connect(url: str, name: str, credentials: NatsCredentials | None = None) -> Client:
    """Connect (as `credentials`' user: Settings.nats_credentials) and keep reconnecting
    forever, to any server of a cluster: a NATS restart must not kill a service."""
    return await nats.connect(
        server_urls(url),
        name=name,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        connect_timeout=5,
        allow_reconnect=True,
        **(credentials.connect_options() if credentials is not None else {}),
    )


async def close(nc: Client, timeout: float = 3.0) -> None:
    """Send what is still buffered, then close; never hang a shutdown on it.

    Not a drain: a drain waits for every message already received to be handled, and a
    replica's subscription may hold thousands nobody will handle once the service stops (a
    drain cut short by a timeout leaves nats-py's internal futures failing in the log).
    Messages received and not acked are redelivered; a replica resumes from its position."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.flush(), timeout)
    await nc.close()


async def connect_streams(
    url: str, name: str, credentials: NatsCredentials | None = None
) -> tuple[Client, JetStreamContext]:
    """What every service starts with: a connection (`connect`), its JetStream context, and the
    streams ensured (`ensure_streams`)."""
    nc = await connect(url, name, credentials)
    js = nc.jetstream()
    try:
        await ensure_streams(js, stream_replicas(nc))
    except BaseException:
        await close(nc)
        raise
    return nc, js


async def ensure_streams(js: JetStreamContext, replicas: int = 1) -> None:
    """The streams, created or brought to this configuration (an update raises a stream kept
    on one server to `replicas`)."""
    configs = [
        StreamConfig(
            name=EVENTS_STREAM,
            subjects=[EVENTS_SUBJECT_PREFIX + ">"],
            storage=StorageType.FILE,
            duplicate_window=120.0,
            max_age=24 * 3600.0,
            num_replicas=replicas,
        ),
        StreamConfig(
            name=EVALS_STREAM,
            subjects=[EVALS_SUBJECT, EVALS_LARGE_SUBJECT, EVALS_FAILED_SUBJECT],
            storage=StorageType.FILE,
            retention=RetentionPolicy.WORK_QUEUE,
            duplicate_window=120.0,
            num_replicas=replicas,
        ),
    ]
    for cfg in configs:
        try:
            await js.add_stream(cfg)
        except BadRequestError:
            await js.update_stream(cfg)


def position_of(headers: dict[str, Any] | None) -> int:
    if not headers or POSITION_HEADER not in headers:
        return 0
    return int(headers[POSITION_HEADER])
