"""The audit subscriber, built with FastStream: a durable push consumer on EVENTS with manual
acks, writing each event to the trail (drover.audit.trail) once.

A message is acked only after its row is committed, so one lost with the process (kill -9) or
with NATS is delivered again; the trail's key drops the repeat. A failure to record (the
database away) naks the message with a delay rather than dropping it. The subscriber follows
the contract in docs/subscribers.md: position, log and body-in-log from the headers, the type
from the subject.
"""

from __future__ import annotations

import logging

from faststream import AckPolicy
from faststream.nats import ConsumerConfig, DeliverPolicy, JStream, NatsBroker, NatsMessage
from faststream.security import SASLPlaintext

from drover.audit.trail import Entry, LogMismatch, Trail
from drover.runtime.bus import (
    BODY_HEADER,
    BODY_IN_LOG,
    EVENTS_STREAM,
    EVENTS_SUBJECT_PREFIX,
    LOG_HEADER,
    POSITION_HEADER,
    position_of,
    server_urls,
)
from drover.runtime.settings import NatsCredentials

log = logging.getLogger("drover.audit")

# Seconds a failed record waits before the message is delivered again.
RETRY_DELAY = 1.0


async def entry_of(msg: NatsMessage, trail: Trail) -> Entry:
    """The event a message carries, its body read from the log when it came without one."""
    headers = msg.headers
    log_id = headers.get(LOG_HEADER, "")
    position = position_of(headers)
    if not log_id or not position:
        raise ValueError(f"not a Drover event message: headers {headers!r}")
    etype = msg.raw_message.subject.removeprefix(EVENTS_SUBJECT_PREFIX)
    if headers.get(BODY_HEADER) == BODY_IN_LOG:
        etype, body = await trail.read_from_log(log_id, position)
    else:
        body = msg.body.decode()
    return Entry(log_id, position, etype, body, headers.get("traceparent"))


class Counts:
    """What the subscriber has done since it started (logged at its stop)."""

    def __init__(self) -> None:
        self.recorded = 0
        self.repeated = 0
        self.failed = 0


def build(
    nats_url: str,
    trail: Trail,
    *,
    credentials: NatsCredentials | None = None,
    durable: str = "audit",
    ack_wait: float = 30.0,
    counts: Counts | None = None,
) -> NatsBroker:
    """A broker whose one subscriber records every EVENTS message in `trail`."""
    tally = counts if counts is not None else Counts()
    # Reconnect forever: a NATS restart must not end the subscriber. FastStream's own
    # per-message logging is kept at DEBUG.
    security = (
        SASLPlaintext(credentials.user, credentials.password.get_secret_value())
        if credentials is not None
        else None
    )
    broker = NatsBroker(
        server_urls(nats_url),
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        log_level=logging.DEBUG,
        security=security,
    )

    # A push consumer in a deliver group named as the durable (one process is what the tests run).
    # Not a pull consumer: FastStream 0.7's fetch loop stops on the plain asyncio timeout nats-py
    # raises when a fetch finds NATS just restarted, and its restarts of the loop then drop
    # whole batches to redelivery (seen in tests/test_audit.py: minutes to catch up).
    @broker.subscriber(
        EVENTS_SUBJECT_PREFIX + ">",
        queue=durable,
        stream=JStream(EVENTS_STREAM, declare=False),
        durable=durable,
        ack_policy=AckPolicy.MANUAL,
        config=ConsumerConfig(ack_wait=ack_wait, deliver_policy=DeliverPolicy.ALL, max_deliver=-1),
    )
    async def on_event(msg: NatsMessage) -> None:
        try:
            entry = await entry_of(msg, trail)
            written = await trail.record(entry)
        except LogMismatch as e:
            # Left in the stream by another log (the database was replaced): its body is
            # nowhere to be read, so retrying cannot help.
            tally.failed += 1
            log.error("dropped %s: %s", msg.headers, e)
            await msg.reject()
            return
        except Exception as e:
            tally.failed += 1
            log.warning("could not record %s: %s; delivered again in %.0f s", msg.headers, e, RETRY_DELAY)
            await msg.nack(delay=RETRY_DELAY)
            return
        if written:
            tally.recorded += 1
        else:
            tally.repeated += 1
        try:
            await msg.ack()
        except Exception as e:  # NATS away: the message comes again and is a repeat then
            log.warning("could not ack position %s: %s", msg.headers.get(POSITION_HEADER), e)

    return broker
