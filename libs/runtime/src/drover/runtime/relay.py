"""The relay: every committed event, in log order, onto the EVENTS stream.

It resumes after the position of the last message in the stream, publishes with the log's id
and the position as `Nats-Msg-Id` (a re-publish inside the duplicate window is dropped) and
pipelines publishes,
awaiting their acks per batch. It wakes on the append transaction's NOTIFY and also polls, so a
missed notification only costs a poll interval. An event too large for a NATS message goes out
without its body, and consumers read it from the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from drover.runtime.bus import (
    BODY_HEADER,
    BODY_IN_LOG,
    EVENTS_STREAM,
    EVENTS_SUBJECT_PREFIX,
    LOG_HEADER,
    MSG_ID_HEADER,
    POSITION_HEADER,
    position_of,
)
from drover.runtime.listen import listen
from drover.runtime.store import EventStore
from drover.runtime.store.eventstore import NOTIFY_CHANNEL

log = logging.getLogger("drover.relay")


async def last_relayed(js: JetStreamContext, log_id: str) -> int:
    """The log position of the newest message in EVENTS from this log (0 when there is none:
    an empty stream, or one left over from another log)."""
    info = await js.stream_info(EVENTS_STREAM)
    if info.state.messages == 0:
        return 0
    try:
        msg = await js.get_msg(EVENTS_STREAM, seq=info.state.last_seq)
    except NotFoundError:
        return 0
    if not msg.headers or msg.headers.get(LOG_HEADER) != log_id:
        return 0
    return position_of(msg.headers)


# Larger events go out without their body (BODY_HEADER): NATS's default max_payload is 1 MiB,
# and the headers and the message's framing need their share of it.
MAX_BODY = 1024 * 1024 - 64 * 1024
ACK_WAIT = 10.0


class Relay:
    def __init__(
        self,
        store: EventStore,
        js: JetStreamContext,
        conninfo: str,
        *,
        batch: int = 500,
        max_body: int = MAX_BODY,
    ) -> None:
        self.store = store
        self.max_body = max_body
        self.js = js
        self.conninfo = conninfo
        self.batch = batch
        self.position = 0
        self.log_id = ""
        self._wake = asyncio.Event()

    def _woken(self, payload: str) -> None:
        self._wake.set()

    @staticmethod
    def _lost(e: Exception) -> None:
        log.warning("relay listen connection lost: %s", e)

    async def run(self, stop: asyncio.Event, poll: float = 0.25) -> None:
        listener = asyncio.create_task(listen(self.conninfo, NOTIFY_CHANNEL, self._woken, on_lost=self._lost))
        try:
            self.log_id = await asyncio.to_thread(self.store.log_id)
            self.position = await last_relayed(self.js, self.log_id)
            while not stop.is_set():
                # Cleared before reading, not after: a commit notified while the read is under
                # way (and too late for it) must wake the next pass, not wait for the poll.
                self._wake.clear()
                try:
                    moved = await self.pump()
                except Exception as e:  # NATS or Postgres away: retry, never lose the place
                    log.warning("relay: %s", e)
                    await asyncio.sleep(0.5)
                    with contextlib.suppress(Exception):
                        self.position = await last_relayed(self.js, self.log_id)
                    continue
                if not moved:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), poll)
        finally:
            listener.cancel()

    async def pump(self) -> int:
        """Publish what the log has past our position; return how many were published."""
        if not self.log_id:
            self.log_id = await asyncio.to_thread(self.store.log_id)
        t0 = time.perf_counter()
        rows = await asyncio.to_thread(self.store.read_raw, self.position, self.batch)
        if not rows:
            return 0
        t1 = time.perf_counter()
        futures = []
        for position, etype, data, meta in rows:
            headers = {
                **{k: str(v) for k, v in meta.items() if k in ("traceparent", "tracestate")},
                MSG_ID_HEADER: f"{self.log_id}:{position}",
                POSITION_HEADER: str(position),
                LOG_HEADER: self.log_id,
            }
            body = data.encode()
            if len(body) > self.max_body:
                # NATS would refuse it (max_payload) and the relay would stall on it forever.
                body, headers[BODY_HEADER] = b"", BODY_IN_LOG
            futures.append(await self.js.publish_async(EVENTS_SUBJECT_PREFIX + etype, body, headers=headers))
        # An ack lost to a NATS restart would never come: past ACK_WAIT the pass fails, and the
        # next reads the stream's last position and publishes again (repeats are deduplicated).
        await asyncio.wait_for(asyncio.gather(*futures), ACK_WAIT)
        self.position = rows[-1][0]
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "relayed %d..%d (%d events, %d kB): read in %.0f ms, published in %.0f ms",
                rows[0][0],
                rows[-1][0],
                len(rows),
                sum(len(r[2]) for r in rows) // 1000,
                (t1 - t0) * 1000,
                (time.perf_counter() - t1) * 1000,
            )
        return len(rows)
