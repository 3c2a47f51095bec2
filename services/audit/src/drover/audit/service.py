"""`drover-audit`: the audit subscriber (drover.audit.subscriber) as its own process: it reads
from the log what the stream no longer holds, then consumes EVENTS once NATS answers."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from pydantic import Field, SecretStr

from drover.audit.subscriber import Counts, build
from drover.audit.trail import Trail
from drover.runtime.bus import close, connect_streams
from drover.runtime.service import run_service
from drover.runtime.settings import NatsCredentials, Settings
from drover.runtime.store import libpq_url

log = logging.getLogger("drover.audit")


class AuditSettings(Settings):
    # Where the trail is written (its password apart, as the log's); unset: Drover's own database.
    audit_database_url: str = ""
    audit_database_password: SecretStr | None = None
    audit_database_password_file: str = ""
    # The durable consumer's name, and seconds a message may stay unacked before it is
    # delivered again (to this subscriber after a restart, or to another on the same durable).
    audit_durable: str = "audit"
    audit_ack_wait: float = Field(default=30.0, gt=0.0)


async def run(_: Settings, stop: asyncio.Event) -> None:
    settings = AuditSettings()
    log_url = libpq_url(settings.database())
    audit_url = (
        settings.model_copy(update={
            "database_url": settings.audit_database_url,
            "database_password": settings.audit_database_password,
            "database_password_file": settings.audit_database_password_file,
        }).database()
        if settings.audit_database_url
        else None
    )  # fmt: skip
    trail = Trail(libpq_url(audit_url) if audit_url is not None else log_url, log_url)
    await trail.ensure()
    copied = await trail.backfill()
    log.info("read %d events from the log before the stream", copied)
    counts = Counts()
    try:
        credentials = settings.nats_credentials()
        while await ready(settings.nats_url, credentials, stop):
            broker = build(
                settings.nats_url,
                trail,
                credentials=credentials,
                durable=settings.audit_durable,
                ack_wait=settings.audit_ack_wait,
                counts=counts,
            )
            try:
                await broker.start()
                log.info("recording EVENTS as durable consumer %r", settings.audit_durable)
                await stop.wait()
            except Exception as e:  # NATS went away while the consumer was being set up
                log.warning("consumer: %s; starting it again", e or type(e).__name__)
                await pause(stop, 1.0)
            finally:
                await broker.stop()
    finally:
        await trail.close()
        log.info("stopped: %d recorded, %d repeats dropped, %d failed", counts.recorded, counts.repeated,
                 counts.failed)  # fmt: skip


async def ready(nats_url: str, credentials: NatsCredentials | None, stop: asyncio.Event) -> bool:
    """Wait until NATS answers, and make the streams if the relay has not made them yet; False
    if stopped first. Once started, the consumer rides out NATS restarts itself."""
    while not stop.is_set():
        try:
            nc, _ = await connect_streams(nats_url, "audit", credentials)
            await close(nc)
            return True
        except Exception as e:
            log.warning("NATS not ready: %s; trying again", e or type(e).__name__)
            await pause(stop, 1.0)
    return False


async def pause(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds` or until `stop`; whether stopped."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


def main() -> None:
    run_service("audit", run)
