"""The LISTEN helper on a real PostgreSQL: every notification's payload in order, the
on-connect hook after LISTEN (a NOTIFY sent from the hook is heard), and after the connection is
killed, the loss reported, a new connection made and the hook run again."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable

import psycopg

from drover.runtime.listen import listen
from drover.runtime.store import libpq_url


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


async def test_payloads_in_order_and_the_hook_again_after_a_lost_connection(database_url: str) -> None:
    conninfo = libpq_url(database_url)
    channel = f"drover_test_{secrets.token_hex(4)}"
    heard: list[str] = []
    connects = 0
    lost: list[Exception] = []

    async def notify(payload: str) -> None:
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def connected() -> None:
        nonlocal connects
        connects += 1
        await notify(f"hello {connects}")  # heard: the hook runs once LISTEN is in

    task = asyncio.create_task(
        listen(conninfo, channel, heard.append, on_connect=connected, on_lost=lost.append)
    )
    try:
        await until(lambda: heard == ["hello 1"])
        for i in range(3):
            await notify(f"n{i}")
        await until(lambda: len(heard) == 4)
        assert heard == ["hello 1", "n0", "n1", "n2"]

        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = %s",
                (f"LISTEN {channel}",),
            )
        await until(lambda: connects == 2 and heard[-1] == "hello 2")
        assert len(lost) == 1 and isinstance(lost[0], psycopg.Error)
        await notify("after")
        await until(lambda: heard[-1] == "after")
    finally:
        task.cancel()
