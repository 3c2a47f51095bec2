"""This API process as one of the cluster's Nomad servers: its member record (announced to the
others through NATS, drover.runtime.members), the members it knows, its agent configuration and
statistics as `/v1/agent/self` shows them, and its health (`/v1/agent/health`): unhealthy, with
the reason, while PostgreSQL or NATS cannot be reached.

Nomad's servers elect a raft leader; Drover's API processes are peers over one log, and each
answers as the leader (`/v1/status/leader`), so each member's raft state is "Leader"."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import socket
import sys
import time
import uuid
from typing import Any

from nats.aio.client import Client
from nats.js import JetStreamContext

from drover.runtime import members
from drover.runtime.bus import connect
from drover.runtime.settings import Settings
from drover.runtime.store.ping import postgres_problem

log = logging.getLogger("drover.api.servers")

# The Nomad version whose HTTP API Drover answers as (its servers' "build").
NOMAD_VERSION = "1.10.0"
VERSION_METADATA = "drover"
# Serf's protocol versions as Nomad's servers report them.
_PROTOCOL = {
    "ProtocolMin": 1,
    "ProtocolMax": 5,
    "ProtocolCur": 2,
    "DelegateMin": 2,
    "DelegateMax": 5,
    "DelegateCur": 4,
}
NATS_TIMEOUT = 2
POSTGRES_TIMEOUT = 2
# After NATS failed to answer, reads of the members answer this server alone for this long
# before trying again (the health check always tries).
RETRY_AFTER = 5.0


def advertised_addr(settings: Settings) -> str:
    """The address this server is reached at: DROVER_ADVERTISE_ADDR, the API's host, or this
    host's own address when the API listens on every interface."""
    if settings.advertise_addr:
        return settings.advertise_addr
    if settings.api_host not in ("0.0.0.0", "::", ""):
        return settings.api_host
    with contextlib.suppress(OSError):
        return socket.gethostbyname(socket.gethostname())
    return "127.0.0.1"


def leader_addr(settings: Settings) -> str:
    """What `/v1/status/leader` answers: this server's address and port."""
    return f"{advertised_addr(settings)}:{settings.api_port}"


def node_name(settings: Settings) -> str:
    return settings.node_name or socket.gethostname()


def self_record(settings: Settings, server_id: str) -> dict[str, Any]:
    """This server as Nomad's ServerMember (its Status set when announced)."""
    addr = advertised_addr(settings)
    port = settings.api_port
    tags = {
        "role": "nomad", "region": settings.region, "dc": settings.datacenter, "build": NOMAD_VERSION,
        "revision": VERSION_METADATA, "vsn": "1", "raft_vsn": "3", "id": server_id, "rpc_addr": addr,
        "port": str(port),
    }  # fmt: skip
    return {
        "Name": f"{node_name(settings)}.{settings.region}",
        "Addr": addr,
        "Port": port,
        "Tags": tags,
        **_PROTOCOL,
    }


class Servers:
    """This server's membership and health; one NATS connection, made when first needed."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.id = str(uuid.uuid4())
        self.record = self_record(settings, self.id)
        self._nc: Client | None = None
        self._lock = asyncio.Lock()
        self._failed_at = -RETRY_AFTER

    async def _js(self, *, retry: bool = True) -> JetStreamContext:
        """The connection's JetStream; `retry` False: none while the last attempt failed lately."""
        async with self._lock:
            if self._nc is None or self._nc.is_closed:
                if not retry and time.monotonic() - self._failed_at < RETRY_AFTER:
                    raise ConnectionError("NATS did not answer lately")
                try:
                    self._nc = await asyncio.wait_for(
                        connect(self.settings.nats_url, "api-members", self.settings.nats_credentials()),
                        NATS_TIMEOUT,
                    )
                except Exception:
                    self._failed_at = time.monotonic()
                    raise
        return self._nc.jetstream()

    async def announce(self, stop: asyncio.Event) -> None:
        """Announce this server every ANNOUNCE_EVERY seconds until `stop`, then mark it left;
        failures are logged once per outage (membership never stops the API)."""
        failing = False
        while not stop.is_set():
            try:
                js = await self._js()
                await asyncio.wait_for(
                    members.put(js, self.id, {**self.record, "Status": members.STATUS_ALIVE}), NATS_TIMEOUT
                )
                failing = False
            except Exception as e:
                log.log(logging.DEBUG if failing else logging.WARNING, "announcing this server failed: %s", e)
                failing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), members.ANNOUNCE_EVERY)
        if self._nc is not None and self._nc.is_connected:
            with contextlib.suppress(Exception):
                left = {**self.record, "Status": members.STATUS_LEFT}
                await asyncio.wait_for(members.put(self._nc.jetstream(), self.id, left), 1.0)

    async def records(self) -> dict[str, dict[str, Any]]:
        """Every server known, by ID, this one alive whatever NATS answers."""
        found: dict[str, dict[str, Any]] = {}
        try:
            found = await asyncio.wait_for(members.read_all(await self._js(retry=False)), NATS_TIMEOUT)
        except Exception as e:
            log.debug("server members unavailable: %s", e)
        found[self.id] = {**self.record, "Status": members.STATUS_ALIVE}
        return found

    async def members(self) -> list[dict[str, Any]]:
        """Nomad's ServerMember list, by name."""
        out = [{k: v for k, v in r.items() if k != "Time"} for r in (await self.records()).values()]
        return sorted(out, key=lambda m: (m["Name"], m["Tags"].get("id", "")))

    async def peers(self) -> list[str]:
        """The live servers' addresses, as Nomad's raft peers ("host:port")."""
        return sorted(
            {f"{m['Addr']}:{m['Port']}" for m in await self.members() if m["Status"] == members.STATUS_ALIVE}
        )

    async def force_leave(self, name: str, *, prune: bool) -> None:
        """Let a failed server go (Nomad's force-leave); an alive one stays, as Serf's does."""
        js = await self._js()
        for key, record in (await self.records()).items():
            if record["Name"] == name and record["Status"] != members.STATUS_ALIVE:
                await members.remove(js, key, record, prune=prune)

    async def health(self) -> str:
        """Why this server cannot do its work, naming the backing server; "" when it can."""
        problems = await asyncio.gather(self._postgres(), self._nats())
        return "; ".join(p for p in problems if p)

    async def _postgres(self) -> str:
        problem = await asyncio.to_thread(postgres_problem, self.settings.database(), POSTGRES_TIMEOUT)
        return f"PostgreSQL unreachable: {problem}" if problem else ""

    async def _nats(self) -> str:
        try:
            await self._js()
            assert self._nc is not None
            await self._nc.flush(timeout=NATS_TIMEOUT)
        except Exception as e:
            return f"NATS unreachable: {str(e) or type(e).__name__}"
        return ""

    def connected(self) -> bool:
        """Whether NATS has been reached (and not lost since)."""
        return self._nc is not None and self._nc.is_connected

    async def close(self) -> None:
        if self._nc is not None and not self._nc.is_closed:
            with contextlib.suppress(Exception):
                await self._nc.close()


def agent_config(settings: Settings) -> dict[str, Any]:
    """The agent's configuration as Nomad's `config` shows it (what clients read: Region,
    Datacenter, NodeName, Version; never a secret: no database or NATS URL)."""
    addr = advertised_addr(settings)
    port = settings.api_port
    return {
        "Region": settings.region,
        "Datacenter": settings.datacenter,
        "NodeName": node_name(settings),
        "DataDir": settings.data_dir,
        "BindAddr": settings.api_host,
        "Ports": {"HTTP": port, "RPC": port, "Serf": port},
        "Addresses": {"HTTP": settings.api_host, "RPC": settings.api_host, "Serf": settings.api_host},
        "AdvertiseAddrs": {"HTTP": f"{addr}:{port}", "RPC": f"{addr}:{port}", "Serf": f"{addr}:{port}"},
        "Server": {
            "Enabled": True,
            "NumSchedulers": settings.workers,
            "EnabledSchedulers": ["service", "batch", "system", "sysbatch", "_core"],
        },
        "Client": {"Enabled": False},
        "Version": {
            "Version": NOMAD_VERSION,
            "VersionPrerelease": "",
            "VersionMetadata": VERSION_METADATA,
            "Revision": "",
        },
    }


def agent_stats(member_list: list[dict[str, Any]], index: int, leader: str) -> dict[str, dict[str, str]]:
    """Nomad's agent stats (every value a string): this server's role, the log it serves as the
    raft index, its members, and the runtime."""
    count = {s: sum(1 for m in member_list if m["Status"] == s) for s in ("alive", "failed", "left")}
    return {
        "nomad": {
            "server": "true", "leader": "true", "leader_addr": leader, "bootstrap": "false",
            "known_regions": "1",
        },
        "raft": {
            "state": "Leader", "applied_index": str(index), "commit_index": str(index), "last_log_index": str(index),
            "num_peers": str(max(0, count["alive"] - 1)),
        },
        "serf": {"members": str(len(member_list)), "failed": str(count["failed"]), "left": str(count["left"])},
        "runtime": {
            "arch": platform.machine(), "version": f"python{sys.version.split()[0]}", "kernel.name": sys.platform,
            "cpu_count": str(os.cpu_count() or 1), "max_procs": str(os.cpu_count() or 1), "goroutines": "0",
        },
    }  # fmt: skip
