"""PostgreSQL LISTEN, kept up: what wakes a tailer of the log (the relay, the API's blocking
queries) at a commit's NOTIFY instead of at its next poll."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import psycopg

# Seconds between a lost connection and the next attempt.
RECONNECT_AFTER = 0.5


async def listen(
    conninfo: str,
    channel: str,
    on_notify: Callable[[str], object],
    *,
    on_connect: Callable[[], Awaitable[object]] | None = None,
    on_lost: Callable[[Exception], object] | None = None,
) -> None:
    """LISTEN on `channel` until cancelled: `on_notify(payload)` for each notification. A
    connection lost (psycopg.Error, OSError) is reported to `on_lost` and made again
    RECONNECT_AFTER later; `on_connect` is awaited after each LISTEN, before the first
    notification on it - a notification sent while no one listened is never delivered."""
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {channel}")
                if on_connect is not None:
                    await on_connect()
                async for note in conn.notifies():
                    on_notify(note.payload)
        except (psycopg.Error, OSError) as e:
            if on_lost is not None:
                on_lost(e)
            await asyncio.sleep(RECONNECT_AFTER)
