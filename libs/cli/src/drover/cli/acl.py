"""`drover acl ...` as Nomad's `nomad acl ...`: the bootstrap, policies (apply, list, info,
delete) and tokens (create, list, info, self, delete), through /v1/acl, printed as Nomad's CLI
prints them (or the API's JSON with -json)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from drover.cli.api import seg
from drover.cli.common import ADDRESS, Address, Json, Problem, client, echo, opt, verb
from drover.cli.output import as_json, kv, table


def _read(path: str) -> str:
    """A file's text, or stdin's for `-`."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except OSError as e:
        raise Problem(f"Error reading {path!r}: {e.strerror or e}") from e


def _time(value: Any) -> str:
    """An RFC 3339 time as Nomad's CLI prints one (`<none>` for none)."""
    if not value or str(value).startswith("0001-"):
        return "<none>"
    return str(value).replace("T", " ").replace("Z", " +0000 UTC")


def _token_text(t: dict[str, Any]) -> str:
    policies = ", ".join(t.get("Policies") or []) or "n/a"
    return kv([
        ("Accessor ID", t["AccessorID"]), ("Secret ID", t.get("SecretID", "")), ("Name", t.get("Name", "")),
        ("Type", t["Type"]), ("Global", bool(t.get("Global"))), ("Create Time", _time(t.get("CreateTime"))),
        ("Expiry Time", _time(t.get("ExpirationTime"))), ("Create Index", t.get("CreateIndex", 0)),
        ("Modify Index", t.get("ModifyIndex", 0)),
        ("Policies", policies if t["Type"] == "client" else "n/a"), ("Roles", "n/a"),
    ])  # fmt: skip


def _show_token(t: dict[str, Any], json_: bool) -> None:
    echo(as_json(t) if json_ else _token_text(t))


@verb()
def bootstrap(
    secret_file: Annotated[
        str, typer.Argument(help="A file holding the token's SecretID to use (- for stdin).")
    ] = "",
    address: Address = ADDRESS,
    json_: Json = False,
) -> None:
    """Bootstrap the ACL system: the first management token (Nomad's `acl bootstrap`)."""
    body = {"BootstrapSecret": _read(secret_file).strip()} if secret_file else None
    with client(address) as c:
        _show_token(c.post("/v1/acl/bootstrap", body), json_)


@verb()
def policy_apply(
    name: Annotated[str, typer.Argument(help="The policy's name.")],
    path: Annotated[str, typer.Argument(help="The file of its rules (HCL or JSON; - for stdin).")],
    address: Address = ADDRESS,
    description: Annotated[str, opt("description", "What the policy is for.")] = "",
) -> None:
    """Create or update a policy (Nomad's `acl policy apply`)."""
    rules = _read(path)
    with client(address) as c:
        c.put(f"/v1/acl/policy/{seg(name)}", {"Name": name, "Description": description, "Rules": rules})
    echo(f'Successfully wrote "{name}" ACL policy!')


@verb()
def policy_list(address: Address = ADDRESS, json_: Json = False) -> None:
    """The policies (a client token sees its own), by name (Nomad's `acl policy list`)."""
    with client(address) as c:
        found = c.get("/v1/acl/policies")
    if json_:
        echo(as_json(found))
    elif not found:
        echo("No policies found")
    else:
        echo(table(["Name", "Description"], [[p["Name"], p.get("Description", "")] for p in found]))


@verb()
def policy_info(
    name: Annotated[str, typer.Argument(help="The policy's name.")],
    address: Address = ADDRESS,
    json_: Json = False,
) -> None:
    """A policy and its rules (Nomad's `acl policy info`)."""
    with client(address) as c:
        p = c.get(f"/v1/acl/policy/{seg(name)}")
    if json_:
        echo(as_json(p))
        return
    head = kv([("Name", p["Name"]), ("Description", p.get("Description", "")),
               ("CreateIndex", p["CreateIndex"]), ("ModifyIndex", p["ModifyIndex"])])  # fmt: skip
    echo(f"{head}\n\nRules\n\n{p.get('Rules', '')}")


@verb()
def policy_delete(
    name: Annotated[str, typer.Argument(help="The policy's name.")], address: Address = ADDRESS
) -> None:
    """Delete a policy (Nomad's `acl policy delete`)."""
    with client(address) as c:
        c.delete(f"/v1/acl/policy/{seg(name)}")
    echo(f'Successfully deleted "{name}" ACL policy!')


@verb()
def token_create(
    address: Address = ADDRESS,
    name: Annotated[str, opt("name", "The token's name.")] = "",
    type_: Annotated[str, opt("type", "client or management.")] = "client",
    policy: Annotated[list[str] | None, opt("policy", "A policy the token holds (repeat for more).")] = None,
    global_: Annotated[bool, opt("global", "Replicate the token to every region.")] = False,
    ttl: Annotated[str, opt("ttl", "How long until it expires (e.g. 8h); none: never.")] = "",
    json_: Json = False,
) -> None:
    """Create a token (Nomad's `acl token create`)."""
    body: dict[str, Any] = {"Name": name, "Type": type_, "Policies": policy or [], "Global": global_}
    if ttl:
        body["ExpirationTTL"] = ttl
    with client(address) as c:
        _show_token(c.post("/v1/acl/token", body), json_)


@verb()
def token_list(address: Address = ADDRESS, json_: Json = False) -> None:
    """Every token, without secrets (Nomad's `acl token list`)."""
    with client(address) as c:
        found = c.get("/v1/acl/tokens")
    if json_:
        echo(as_json(found))
        return
    if not found:
        echo("No tokens found")
        return
    rows = [[t.get("Name", ""), t["Type"], bool(t.get("Global")), t["AccessorID"], _time(t.get("ExpirationTime"))]
            for t in found]  # fmt: skip
    echo(table(["Name", "Type", "Global", "Accessor ID", "Expiry Time"], rows))


@verb()
def token_info(
    accessor_id: Annotated[str, typer.Argument(help="The token's AccessorID.")],
    address: Address = ADDRESS,
    json_: Json = False,
) -> None:
    """A token, with its secret (Nomad's `acl token info`)."""
    with client(address) as c:
        _show_token(c.get(f"/v1/acl/token/{seg(accessor_id)}"), json_)


@verb()
def token_self(address: Address = ADDRESS, json_: Json = False) -> None:
    """The token this command runs with (Nomad's `acl token self`)."""
    with client(address) as c:
        _show_token(c.get("/v1/acl/token/self"), json_)


@verb()
def token_delete(
    accessor_id: Annotated[str, typer.Argument(help="The token's AccessorID.")], address: Address = ADDRESS
) -> None:
    """Delete a token (Nomad's `acl token delete`)."""
    with client(address) as c:
        c.delete(f"/v1/acl/token/{seg(accessor_id)}")
    echo(f"Token {accessor_id} successfully deleted")
