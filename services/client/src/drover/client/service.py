"""`drover-client` (also `drover agent`): the node agent.

drover agent [--config agent.hcl] [--api URL] [--data-dir DIR] [--name NAME]
             [--datacenter DC] [--node-class C] [--node-pool P] [--meta k=v ...]
             [--enable-raw-exec] [--gc-interval 1m] [--gc-max-allocs 50]
             [--http-addr 127.0.0.1:0] [--region R] [--network-interface IF]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path

from drover.client.agent import Agent
from drover.client.config import AgentConfig, http_addr_problem, load
from drover.model.drivers import DRIVER_RAW_EXEC
from drover.model.durations import parse_duration
from drover.runtime.pyheap import tune
from drover.runtime.service import run_loop
from drover.runtime.telemetry import setup_logging


def parse(argv: list[str]) -> AgentConfig:
    """The agent's configuration: the HCL file's, if given, with the flags over it."""
    ap = argparse.ArgumentParser(prog="drover agent", description="Run a Drover client (node agent).")
    ap.add_argument("--config", type=Path, help="HCL configuration file (Nomad's client layout)")
    ap.add_argument("--api", help="the Drover API address (default http://127.0.0.1:4646)")
    ap.add_argument("--data-dir")
    ap.add_argument("--name")
    ap.add_argument("--datacenter")
    ap.add_argument("--node-class")
    ap.add_argument("--node-pool")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--enable-raw-exec", action="store_true", help="enable the raw_exec driver (off by default)"
    )
    ap.add_argument(
        "--http-addr", help="HOST:PORT serving alloc logs to the API (default 127.0.0.1:0, a free port)"
    )
    ap.add_argument("--region", help="the region tasks are told they run in (default global)")
    ap.add_argument(
        "--network-interface",
        help="the interface whose address ports are given on (default: the default route's)",
    )
    ap.add_argument("--gc-interval", help="how often terminal alloc directories are collected (default 1m)")
    ap.add_argument(
        "--gc-max-allocs", type=int, help="allocs kept before terminal ones are collected (default 50)"
    )
    args = ap.parse_args(argv)
    cfg = AgentConfig()
    if args.config is not None:
        try:
            cfg = load(args.config, cfg)
        except (OSError, ValueError) as e:
            ap.error(str(e))
    for key in ("api", "data_dir", "name", "datacenter", "node_class", "node_pool", "http_addr", "region"):
        value = getattr(args, key)
        if value is not None:
            setattr(cfg, key, value)
    for item in args.meta:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--meta wants KEY=VALUE, not {item!r}")
        cfg.meta[key] = value
    if args.http_addr is not None and (problem := http_addr_problem(args.http_addr)):
        ap.error(f"--http-addr: {problem}")
    if args.network_interface is not None:
        if args.network_interface not in {name for _, name in socket.if_nameindex()}:
            ap.error(f"--network-interface: no interface {args.network_interface!r} here")
        cfg.network_interface = args.network_interface
    if args.enable_raw_exec:
        cfg.drivers.add(DRIVER_RAW_EXEC)
    if args.gc_interval is not None:
        try:
            cfg.gc_interval = parse_duration(args.gc_interval)
        except ValueError as e:
            ap.error(f"--gc-interval: {e}")
        if cfg.gc_interval <= 0:
            ap.error("--gc-interval: must be positive")
    if args.gc_max_allocs is not None:
        if args.gc_max_allocs < 1:
            ap.error("--gc-max-allocs: must be a positive integer")
        cfg.gc_max_allocs = args.gc_max_allocs
    return cfg


def main(argv: list[str] | None = None) -> None:
    """Run the agent until SIGINT or SIGTERM."""
    cfg = parse(sys.argv[1:] if argv is None else argv)
    setup_logging("client")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    tune()
    agent = Agent(cfg)

    async def amain() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await agent.run(stop)

    run_loop(amain())
