"""The API's typed dependencies: what a handler asks for by annotation. Each is set up once
by `create_app` and kept on the app's state; the providers are coroutines (FastAPI runs a
plain function dependency in a worker thread)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request

from drover.api.blocking import Blocking
from drover.api.commands import Commands
from drover.api.heartbeats import Heartbeats
from drover.api.servers import Servers
from drover.runtime.settings import Settings
from drover.runtime.store.queries import Reads


def _from_state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A provider of what `create_app` kept on the app's state under `name`."""

    async def provide(request: Request) -> Any:
        return getattr(request.app.state, name)

    return provide


BlockingDep = Annotated[Blocking, Depends(_from_state("blocking"))]
CommandsDep = Annotated[Commands, Depends(_from_state("commands"))]
ReadsDep = Annotated[Reads, Depends(_from_state("reads"))]
HeartbeatsDep = Annotated[Heartbeats, Depends(_from_state("heartbeats"))]
SettingsDep = Annotated[Settings, Depends(_from_state("settings"))]
ServersDep = Annotated[Servers, Depends(_from_state("servers"))]
