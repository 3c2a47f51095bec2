"""/v1/vars and /v1/var/:path: Nomad Variables. Their items are sealed with the keyring
(drover.runtime.keyring) before the command sees them, and opened only to answer; the log,
the projection and the event stream hold ciphertext alone. Locks: ?lock-acquire, ?lock-renew,
?lock-release. /v1/operator/keyring: the keys, and their rotation (?full: every variable
sealed again under the new key at once, else each at its next write)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from drover.api.blocking import Paged, read_params
from drover.api.deps import BlockingDep, CommandsDep
from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.listfilter import filtered_paged
from drover.control.commands import variables as commands
from drover.control.commands.variables import VarConflict, VariableChange
from drover.control.errors import Invalid
from drover.model.events import VariableLockRenewed, VariableUpserted
from drover.model.state import InMemoryState
from drover.model.variables import VariableEncrypted, VariableRequest, lock_settings, set_problems
from drover.runtime.keyring import Keyring
from drover.runtime.watches import list_keys, variable_key

router = APIRouter(route_class=JsonRoute, tags=["variables"])
_LOCK_OPS = ("lock-acquire", "lock-renew", "lock-release")


async def _keyring(request: Request) -> Keyring:
    keyring: Keyring = request.app.state.keyring
    return keyring


KeyringDep = Annotated[Keyring, Depends(_keyring)]


def _namespace(request: Request, body: VariableRequest | None = None) -> str:
    """The variable's namespace: its own (in a write's body) first, as Nomad's Variables.Apply
    takes it, then the request's."""
    return (body.namespace if body else "") or request.query_params.get("namespace") or "default"


def _json(content: Any, index: int, status: int = 200) -> Response:
    headers = {"X-Nomad-Index": str(index), "X-Nomad-KnownLeader": "true", "X-Nomad-LastContact": "0"}
    return Response(json.dumps(content), status_code=status, media_type="application/json", headers=headers)


def _open(keyring: Keyring, var: VariableEncrypted, now: int) -> dict[str, Any]:
    return var.decrypted(keyring.open(var.namespace, var.path, var.sealed), now)


@router.get("/v1/vars")
async def list_variables(request: Request, blocking: BlockingDep, prefix: str = "") -> Response:
    """Metadata only, by namespace and path (`namespace=*`: every namespace's); ?per_page and
    ?next_token (Nomad's `<namespace>.<path>`) page through them."""
    namespace = request.query_params.get("namespace") or "default"
    now = time.time_ns()
    # ?filter= judges the metadata: a variable's items are never in what it sees.
    page = filtered_paged(
        request,
        lambda start, limit: blocking.reads.variables(namespace, prefix, start=start, limit=limit),
        lambda v: f"{v.namespace}.{v.path}",
        shape=lambda found: [v.metadata(now) for v in found],
    )

    def read() -> tuple[int, Paged]:
        return blocking.reads.index(), page()

    index, wait = read_params(request)
    if index:
        await blocking.watcher.wait_changed(list_keys("variables", namespace), index, wait)
    current, found = await asyncio.to_thread(read)
    response = _json(found.items, current)
    if found.next_token:
        response.headers["X-Nomad-NextToken"] = found.next_token
    return response


@router.get("/v1/var/{path:path}")
async def read_variable(path: str, request: Request, blocking: BlockingDep, keyring: KeyringDep) -> Response:
    if not path:
        raise ApiError(400, "missing variable path")
    namespace = _namespace(request)

    def read() -> tuple[int, Any]:
        index, var = blocking.reads.index(), blocking.reads.variable(namespace, path)
        return index, var

    index, wait = read_params(request)
    if index:
        # A held lock lapses without a write: the wait ends when it does, as the answer changes.
        _, var = await asyncio.to_thread(read)
        lock = var.held_lock(time.time_ns()) if var is not None else None
        if lock is not None:
            wait = min(wait, max(0.0, (lock.expires_at - time.time_ns()) / 1e9))
        await blocking.watcher.wait_changed([variable_key(namespace, path)], index, wait)
    current, var = await asyncio.to_thread(read)
    if var is None:
        raise ApiError(404, "variable not found")
    return _json(_open(keyring, var, time.time_ns()), current)


def _cas(request: Request) -> int | None:
    value = request.query_params.get("cas")
    if value is None or value == "":
        return None
    if not value.isdigit() or not value.isascii():
        raise ApiError(400, f"can not parse cas: invalid index {value!r}")
    return int(value)


def _lock_op(request: Request) -> str:
    ops = [op for op in _LOCK_OPS if op in request.query_params]
    if len(ops) > 1:
        raise ApiError(400, "multiple lock operations")
    if ops and _cas(request) is not None:
        raise ApiError(400, "CAS can't be used with lock operations")
    return ops[0] if ops else ""


def _conflict(keyring: Keyring, c: VarConflict, index: int) -> Response:
    """409 with the variable conflicted with, as Nomad answers; a zero value where it hides it."""
    if c.var is not None:
        return _json(_open(keyring, c.var, time.time_ns()), c.var.modify_index, 409)
    body: dict[str, Any] = {"Namespace": c.namespace, "Path": c.path, "CreateIndex": 0, "ModifyIndex": 0,
                            "CreateTime": 0, "ModifyTime": 0, "Items": None}  # fmt: skip
    if c.lock:
        body["Lock"] = {"ID": "", "TTL": "", "LockDelay": ""}
    return _json(body, index, 409)


def _written(change: VariableChange, index: int) -> VariableEncrypted:
    """The variable as the change's event wrote it at `index` (the reducer, on what it read)."""
    state = InMemoryState()
    if change.before is not None:
        state.upsert_variable(change.before)
    event = change.events[0].event
    assert isinstance(event, VariableUpserted | VariableLockRenewed)
    event.apply_to(state, index)
    var = state.variable(event.namespace, event.path)
    assert var is not None
    return var


@router.put("/v1/var/{path:path}")
@router.post("/v1/var/{path:path}")
async def write_variable(
    path: str,
    request: Request,
    commands_: CommandsDep,
    keyring: KeyringDep,
    body: VariableRequest | None = None,
) -> Response:
    if not path:
        raise ApiError(400, "missing variable path")
    b = body or VariableRequest()
    namespace = _namespace(request, b)
    op = _lock_op(request)
    lock_id = b.lock.id if b.lock is not None else ""
    if op == "lock-renew":
        change, positions = await commands_.run(
            lambda reads: commands.renew(reads, namespace, path, lock_id, time.time_ns())
        )
        return _json(_written(change, positions[-1]).metadata(time.time_ns()), positions[-1])
    if op == "lock-release":
        if not lock_id:
            raise Invalid("missing lock information")
        if b.items:
            raise Invalid("lock release operation doesn't take variable items")
        change, positions = await commands_.run(
            lambda reads: commands.release(reads, namespace, path, lock_id, time.time_ns())
        )
        if change.conflict is not None:
            return _conflict(keyring, change.conflict, positions[-1])
        return _json(
            {**_written(change, positions[-1]).metadata(time.time_ns()), "Items": None}, positions[-1]
        )
    items = b.items or {}
    if op == "lock-acquire":
        ttl, delay, problems = lock_settings(namespace, path, b.items, b.lock)
        if problems:
            raise Invalid.of(problems)
        holder = lock_id or str(uuid.uuid4())
        sealed = keyring.seal(namespace, path, items)
        change, positions = await commands_.run(
            lambda reads: commands.acquire(
                reads, namespace, path, sealed, time.time_ns(), lock_id=holder, ttl=ttl, lock_delay=delay
            )
        )
    else:
        problems = set_problems(namespace, path, b.items, b.lock)
        if problems:
            raise Invalid.of(problems)
        cas = _cas(request)
        sealed = keyring.seal(namespace, path, items)
        change, positions = await commands_.run(
            lambda reads: commands.upsert(
                reads, namespace, path, sealed, time.time_ns(), cas=cas, lock_id=lock_id
            )
        )
    if change.conflict is not None:
        return _conflict(keyring, change.conflict, positions[-1])
    return _json(_written(change, positions[-1]).decrypted(items, time.time_ns()), positions[-1])


@router.delete("/v1/var/{path:path}")
async def delete_variable(
    path: str, request: Request, commands_: CommandsDep, keyring: KeyringDep
) -> Response:
    if not path:
        raise ApiError(400, "missing variable path")
    namespace = _namespace(request)
    cas = _cas(request)
    change, positions = await commands_.run(
        lambda reads: commands.delete(reads, namespace, path, time.time_ns(), cas=cas)
    )
    if change.conflict is not None:
        return _conflict(keyring, change.conflict, positions[-1])
    return Response(status_code=204, headers={"X-Nomad-Index": str(positions[-1])})


@router.get("/v1/operator/keyring/keys")
async def keyring_keys(keyring: KeyringDep, blocking: BlockingDep) -> Response:
    return _json(await asyncio.to_thread(keyring.list_keys), blocking.reads.index())


@router.put("/v1/operator/keyring/rotate")
@router.post("/v1/operator/keyring/rotate")
async def keyring_rotate(request: Request, keyring: KeyringDep, commands_: CommandsDep) -> dict[str, Any]:
    """A new active key (Nomad's RotateKeyring); ?full=true seals every variable again under
    it before answering (Nomad does that in the background)."""
    key = await asyncio.to_thread(keyring.rotate)
    if request.query_params.get("full", "").lower() in ("true", "1"):
        for var in await asyncio.to_thread(commands_.reads.all_variables):
            await _rekey(commands_, keyring, var.namespace, var.path)
    return {"Key": key}


async def _rekey(commands_: Any, keyring: Keyring, namespace: str, path: str) -> None:
    """Seal one variable again under the active key, from what it holds when the append is
    decided (a write meanwhile is decided again)."""

    def decide(reads: Any) -> VariableChange:
        var = reads.variable(namespace, path)
        if var is None or var.sealed.key_id == keyring.active().key_id:
            return VariableChange()
        items = keyring.open(namespace, path, var.sealed)
        return commands.rekey(reads, var, keyring.seal(namespace, path, items))

    await commands_.run(decide)
