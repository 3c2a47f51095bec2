"""`drover-audit`: the audit subscriber (drover.audit.subscriber) as its own process. Any number
may run on one durable consumer: JetStream hands each message to one of them, and the trail's
key keeps each event once whichever records it."""

from __future__ import annotations

import asyncio
import logging

from pydantic import Field

from drover.audit.subscriber import Counts, build
from drover.audit.trail import Trail
from drover.runtime.bus import close, connect_streams
from drover.runtime.service import run_service
from drover.runtime.settings import Settings
from drover.runtime.store import libpq_url

log = logging.getLogger("drover.audit")


class AuditSettings(Settings):
    # Where the trail is written; unset: Drover's own database.
    audit_database_url: str = ""
    # The durable consumer's name, and seconds a message may stay unacked before it is
    # delivered again (to this subscriber after a restart, or to another on the same durable).
    audit_durable: str = "audit"
    audit_ack_wait: float = Field(default=30.0, gt=0.0)


async def run(_: Settings, stop: asyncio.Event) -> None:
    settings = AuditSettings()
    log_url = libpq_url(settings.database_url)
    trail = Trail(libpq_url(settings.audit_database_url) if settings.audit_database_url else log_url, log_url)
    await trail.ensure()
    # The stream may not exist yet when the subscriber starts before every other service.
    nc, _js = await connect_streams(settings.nats_url, "audit")
    await close(nc)
    counts = Counts()
    broker = build(
        settings.nats_url,
        trail,
        durable=settings.audit_durable,
        ack_wait=settings.audit_ack_wait,
        counts=counts,
    )
    await broker.start()
    log.info("recording EVENTS as durable consumer %r", settings.audit_durable)
    try:
        await stop.wait()
    finally:
        await broker.stop()
        await trail.close()
        log.info("stopped: %d recorded, %d repeats dropped, %d failed", counts.recorded, counts.repeated,
                 counts.failed)  # fmt: skip


def main() -> None:
    run_service("audit", run)
