"""`drover var get|put|list|purge` as Nomad's `nomad var ...`, and `drover operator root
keyring list|rotate`: Nomad Variables through /v1/var and /v1/vars, the keyring through
/v1/operator/keyring. `var put` is a check-and-set as Nomad's: without -force or -check-index
it only creates (a variable already there is a conflict)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from drover.cli.api import ApiError, Client
from drover.cli.common import (
    ADDRESS,
    NAMESPACE,
    Address,
    Filter,
    Json,
    Namespace,
    Problem,
    client,
    echo,
    filtered,
    opt,
    verb,
)
from drover.cli.output import as_json, date, kv, table

Out = Annotated[str, opt("out", "Output format: none, json or table.")]
CheckIndex = Annotated[str, opt("check-index", "Write only if the variable's ModifyIndex is this (0: new).")]
NO_MATCHES = "No matching variables found"


def _path(path: str) -> str:
    """A path as Nomad's CLI takes it: surrounding slashes dropped."""
    return path.strip("/")


def _check_index(value: str) -> int | None:
    if value == "":
        return None
    if not value.isdigit():
        raise Problem(f"Invalid -check-index value {value!r}: not parsable as uint64")
    return int(value)


def _value(text: str) -> str:
    """An item's value: `@file` read from the file, `-` from stdin, else as given."""
    if text == "-":
        return sys.stdin.read()
    if text.startswith("@"):
        return Path(text[1:]).read_text()
    return text


def _spec(arg: str, fmt: str) -> dict[str, Any]:
    """A whole variable specification from stdin (`-`) or an `@file`."""
    if fmt != "json":
        raise Problem(f"unsupported -in format {fmt!r}: json only")
    text = sys.stdin.read() if arg == "-" else Path(arg[1:]).read_text()
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as e:
        raise Problem(f"Failed to parse variable data: {e}") from e
    if not isinstance(spec, dict):
        raise Problem("Failed to parse variable data: not a JSON object")
    return spec


def _variable_table(v: dict[str, Any]) -> str:
    meta = kv([
        ("Namespace", v["Namespace"]), ("Path", v["Path"]), ("Create Time", date(v["CreateTime"])),
        ("Check Index", v["ModifyIndex"]),
    ])  # fmt: skip
    items = kv(sorted((v.get("Items") or {}).items()))
    return f"{meta}\n\nItems\n{items}"


def _show(v: dict[str, Any], out: str) -> None:
    if out == "json":
        echo(as_json(v))
    elif out == "table":
        echo(_variable_table(v))


def _conflict(c: Client, path: str, check: int, params: dict[str, Any]) -> str:
    """Nomad's words for a check-and-set conflict, with the server-side index."""
    r = c.http.get(f"/v1/var/{path}", params={"namespace": c.namespace, **params})
    index = r.json().get("ModifyIndex", 0) if r.status_code == 200 else 0
    return f"Check-and-Set conflict\n\n    Your provided check-index ({check}) does not match the server-side index ({index})."


@verb()
def put(
    args: Annotated[list[str], typer.Argument(help="<path> [<key>=<value>]..., or a spec: - or @file")],
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
    in_: Annotated[str, opt("in", "The specification's format (json).")] = "json",
    out: Out = "none",
    force: Annotated[bool, opt("force", "Write whatever the variable's index is.")] = False,
    check_index: CheckIndex = "",
) -> None:
    """Create or update a variable (Nomad's `var put`): items as key=value (a value @file or -
    read from the file or stdin; an empty value removes the item), or a whole specification."""
    spec: dict[str, Any] = {}
    rest = list(args)
    first = rest.pop(0)
    if first == "-" or first.startswith("@"):
        spec = _spec(first, in_)
        path = _path(str(spec.get("Path", "")))
    else:
        path = _path(first)
        if rest and (rest[0] == "-" or rest[0].startswith("@")):
            spec = _spec(rest.pop(0), in_)
    items: dict[str, str] = {str(k): str(v) for k, v in (spec.get("Items") or {}).items()}
    for pair in rest:
        key, eq, value = pair.partition("=")
        if not eq:
            raise Problem(f"Failed to parse K=V data: {pair!r} is not key=value")
        if value == "":
            items.pop(key, None)
        else:
            items[key] = _value(value)
    if not path:
        raise Problem("Not enough arguments: a variable path is required")
    if not items:
        raise Problem("Must supply data")
    ns = str(spec.get("Namespace") or namespace)
    check = _check_index(check_index)
    params: dict[str, Any] = {} if force else {"cas": check if check is not None else 0}
    with client(address, ns) as c:
        try:
            written = c.put(f"/v1/var/{path}", {"Path": path, "Namespace": ns, "Items": items}, **params)
        except ApiError as e:
            if e.status == 409:
                raise Problem(_conflict(c, path, params.get("cas", 0), {})) from e
            raise
    if out == "none":
        echo(f'Created variable "{written["Path"]}" with modify index {written["ModifyIndex"]}')
    else:
        _show(written, out)


@verb()
def get(
    path: Annotated[str, typer.Argument(help="The variable's path.")],
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
    item: Annotated[str, opt("item", "Print only this item's value.")] = "",
    out: Out = "",
) -> None:
    """Read a variable (Nomad's `var get`): a table on a terminal, else JSON; -item one value."""
    with client(address, namespace) as c:
        try:
            v = c.get(f"/v1/var/{_path(path)}")
        except ApiError as e:
            if e.status == 404:
                raise Problem("Variable not found") from e
            raise
    if item:
        items = v.get("Items") or {}
        if item not in items:
            raise Problem(f'Variable does not contain "{item}" item')
        echo(items[item])
        return
    _show(v, out or ("table" if sys.stdout.isatty() else "json"))


@verb()
def list_vars(
    prefix: Annotated[str, typer.Argument(help="Only paths starting with this.")] = "",
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
    out: Out = "table",
    json_: Json = False,
    filter_: Filter = "",
) -> None:
    """List variables' metadata (Nomad's `var list`), by path prefix; -namespace '*' every
    namespace's."""
    with client(address, namespace) as c:
        found = c.get("/v1/vars", prefix=prefix, **filtered(filter_))
    if json_ or out == "json":
        echo(as_json(found))
        return
    if not found:
        echo(NO_MATCHES)
        return
    echo(
        table(
            ["Namespace", "Path", "Last Updated"],
            [[v["Namespace"], v["Path"], date(v["ModifyTime"])] for v in found],
        )
    )


@verb()
def purge(
    path: Annotated[str, typer.Argument(help="The variable's path.")],
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
    check_index: CheckIndex = "",
) -> None:
    """Delete a variable (Nomad's `var purge`), checked at -check-index if given."""
    check = _check_index(check_index)
    params = {"cas": check} if check is not None else {}
    p = _path(path)
    with client(address, namespace) as c:
        try:
            c.delete(f"/v1/var/{p}", **params)
        except ApiError as e:
            if e.status == 409 and check is not None:
                raise Problem(_conflict(c, p, check, {})) from e
            raise
    echo(f'Successfully purged variable "{p}"!')


@verb()
def keyring_list(address: Address = ADDRESS, json_: Json = False) -> None:
    """The keyring's keys (Nomad's `operator root keyring list`)."""
    with client(address) as c:
        keys = c.get("/v1/operator/keyring/keys")
    if json_:
        echo(as_json(keys))
        return
    echo(
        table(
            ["Key", "State", "Create Time"], [[k["KeyID"], k["State"], date(k["CreateTime"])] for k in keys]
        )
    )


@verb()
def keyring_rotate(
    address: Address = ADDRESS,
    full: Annotated[bool, opt("full", "Seal every variable again under the new key now.")] = False,
) -> None:
    """A new active key (Nomad's `operator root keyring rotate`); old keys stay to read what
    they sealed, each variable sealed again at its next write, or at once with -full."""
    with client(address) as c:
        key = c.put("/v1/operator/keyring/rotate", **({"full": "true"} if full else {}))["Key"]
    echo(table(["Key", "State", "Create Time"], [[key["KeyID"], key["State"], date(key["CreateTime"])]]))
