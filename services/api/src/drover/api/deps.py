"""The API's typed dependencies: what a handler asks for by annotation. Each is set up once
by `create_app` and kept on the app's state; the providers are coroutines (FastAPI runs a
plain function dependency in a worker thread)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from drover.api.blocking import Blocking
from drover.api.commands import Commands
from drover.api.heartbeats import Heartbeats
from drover.runtime.settings import Settings
from drover.runtime.store.queries import Reads


async def _blocking(request: Request) -> Blocking:
    blocking: Blocking = request.app.state.blocking
    return blocking


async def _commands(request: Request) -> Commands:
    commands: Commands = request.app.state.commands
    return commands


async def _reads(request: Request) -> Reads:
    reads: Reads = request.app.state.reads
    return reads


async def _heartbeats(request: Request) -> Heartbeats:
    heartbeats: Heartbeats = request.app.state.heartbeats
    return heartbeats


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


BlockingDep = Annotated[Blocking, Depends(_blocking)]
CommandsDep = Annotated[Commands, Depends(_commands)]
ReadsDep = Annotated[Reads, Depends(_reads)]
HeartbeatsDep = Annotated[Heartbeats, Depends(_heartbeats)]
SettingsDep = Annotated[Settings, Depends(_settings)]
