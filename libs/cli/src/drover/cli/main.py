"""`drover`: run a local cluster, operate on jobs through the API, administer the event log."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandFunctionType

from drover.cli import (
    acl,
    allocs,
    deployments,
    evals,
    events,
    jobrestart,
    jobrun,
    jobs,
    logs,
    namespaces,
    nodes,
    operator,
    system,
    variables,
)
from drover.cli.api import set_token
from drover.runtime.settings import Settings

HELP = """Drover: a cluster scheduler with Nomad's model and API.

The verbs talk to the API at -address, DROVER_ADDR or NOMAD_ADDR (default
http://127.0.0.1:4646), in the namespace -namespace, DROVER_NAMESPACE or
NOMAD_NAMESPACE (default "default"; '*' lists every namespace's), with the ACL token of -token
(anywhere on the line), NOMAD_TOKEN or DROVER_TOKEN. Flags are spelt as Nomad's (-json) or with
two dashes (--json). Every read takes -json (the API's JSON); IDs may be unique prefixes.

Exit codes: 0 success; 1 an error (the API's refusal is printed, or the
address it could not reach); 2 bad usage, and for `job run` allocs that could
not be placed (the reasons are printed); `job plan`: 0 no allocs would change,
1 some would, 255 an error. `job restart` and `event tail` say theirs in -h.
"""

# Nomad's spellings of help too (`drover job restart -h`).
_HELP_NAMES = {"help_option_names": ["--help", "-h", "-help"]}


class _HelpInOrder:
    """The help option's names in the order given: Typer's bundled Click gathers them in a set,
    so `-h,-help` was listed in the order of the interpreter's hash seed."""

    params: list[Any]

    def get_help_option_names(self, ctx: Any) -> list[str]:
        taken = {name for p in self.params for name in (*p.opts, *p.secondary_opts)}
        return [name for name in dict.fromkeys(ctx.help_option_names) if name not in taken]


class _Group(_HelpInOrder, TyperGroup):
    pass


class _Command(_HelpInOrder, TyperCommand):
    pass


class _Typer(typer.Typer):
    """typer.Typer whose groups and commands list the help option's names in order."""

    def __init__(self, **options: Any) -> None:
        super().__init__(cls=_Group, **options)

    def command(self, *args: Any, **options: Any) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(*args, cls=_Command, **options)


app = _Typer(help=HELP, no_args_is_help=True, context_settings=_HELP_NAMES, pretty_exceptions_enable=False)
admin = _Typer(help="Administer the event log and its projections.", no_args_is_help=True)
app.add_typer(admin, name="admin")


def _group(
    name: str, help: str, verbs: dict[str, Callable[..., None]], parent: typer.Typer = app
) -> typer.Typer:
    """A group of verbs (`drover job ...`), each a command named as Nomad's."""
    group = _Typer(help=help, no_args_is_help=True, context_settings=_HELP_NAMES)
    parent.add_typer(group, name=name)
    for verb, fn in verbs.items():
        group.command(verb)(fn)
    return group


job = _group("job", "Run, plan, inspect and operate on jobs.", {
    "run": jobrun.run, "plan": jobrun.plan, "validate": jobrun.validate, "init": jobrun.init,
    "status": jobs.status, "inspect": jobs.inspect, "history": jobs.history, "stop": jobs.stop,
    "revert": jobs.revert, "scale": jobs.scale, "dispatch": jobs.dispatch,
})  # fmt: skip
job.command("restart", help=jobrestart.HELP, no_args_is_help=True)(jobrestart.restart)
_group("periodic", "Periodic jobs.", {"force": jobs.periodic_force}, parent=job)
alloc = _group("alloc", "Inspect and act on allocations.",
               {"status": allocs.status, "stop": allocs.stop, "restart": allocs.restart})  # fmt: skip
alloc.command("logs", help=logs.HELP, no_args_is_help=True)(logs.logs)
_group("eval", "Inspect evaluations.", {"list": evals.list_evals, "status": evals.status})
node = _group("node", "Inspect and act on client nodes.",
              {"status": nodes.status, "drain": nodes.drain, "eligibility": nodes.eligibility})  # fmt: skip
_group("pool", "Node pools: named sets of nodes jobs are placed in.", {
    "list": operator.pool_list, "info": operator.pool_info, "apply": operator.pool_apply,
    "delete": operator.pool_delete, "nodes": operator.pool_nodes, "jobs": operator.pool_jobs,
}, parent=node)  # fmt: skip
_group("server", "The cluster's servers (its API processes).", {"members": operator.server_members})
_group("deployment", "Inspect and act on deployments.", {
    "list": deployments.list_deployments, "status": deployments.status, "promote": deployments.promote,
    "pause": deployments.pause, "resume": deployments.resume, "fail": deployments.fail,
})  # fmt: skip
_group("namespace", "Namespaces: create, inspect and delete them.", {
    "list": namespaces.list_namespaces, "status": namespaces.status, "apply": namespaces.apply,
    "delete": namespaces.delete,
})  # fmt: skip
_group("system", "Cluster-wide operations.", {"gc": system.gc})
app.command("status")(system.status)
_group("event", "Follow the cluster's events.", {}).command("tail", help=events.HELP)(events.tail)
_group("var", "Nomad Variables: secrets by path, sealed with the keyring.", {
    "put": variables.put, "get": variables.get, "list": variables.list_vars, "purge": variables.purge,
})  # fmt: skip
operator_group = _group("operator", "Cluster operations.", {})
_group("keyring", "The keyring that seals variables.",
       {"list": variables.keyring_list, "rotate": variables.keyring_rotate},
       parent=_group("root", "The cluster's root keys.", {}, parent=operator_group))  # fmt: skip
_group("scheduler", "The scheduler configuration.",
       {"get-config": operator.get_config, "set-config": operator.set_config}, parent=operator_group)  # fmt: skip


acl_group = _group("acl", "ACL tokens and policies.", {"bootstrap": acl.bootstrap})
_group("policy", "ACL policies.", {"apply": acl.policy_apply, "list": acl.policy_list, "info": acl.policy_info,
                                   "delete": acl.policy_delete}, parent=acl_group)  # fmt: skip
_group("token", "ACL tokens.", {"create": acl.token_create, "list": acl.token_list, "info": acl.token_info,
                                "self": acl.token_self, "delete": acl.token_delete}, parent=acl_group)  # fmt: skip

# Commands whose arguments are another program's (left as they are).
_PASSED_ON = ("agent", "sim")
_TOKEN_FLAGS = ("-token", "--token")


def take_token(args: list[str]) -> tuple[list[str], str | None]:
    """`args` without Nomad's -token flag, wherever it is (`-token X`, `-token=X`, two dashes
    too), and its value (None when absent); the last one written counts."""
    out: list[str] = []
    found: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if arg == "--":
            out += args[i:]
            break
        if name in _TOKEN_FLAGS and eq:
            found = value
        elif arg in _TOKEN_FLAGS and i + 1 < len(args):
            found = args[i + 1]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out, found


def main() -> None:
    """`drover`: the global -token taken out of the command line (every verb sends it)."""
    args = sys.argv[1:]
    if not args or args[0] not in _PASSED_ON:
        args, token = take_token(args)
        if token is not None:
            set_token(token)
    app(args=args, prog_name="drover")


def _settings() -> Settings:
    """Settings from the environment, falling back to the URLs a running `drover up` wrote."""
    settings = Settings()
    env_file = Path(settings.data_dir) / "cluster.env"
    if (not settings.database_url or not settings.nats_url) and env_file.exists():
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            os.environ.setdefault(key, value)
        settings = Settings()
    return settings


@app.command()
def up(
    ha: Annotated[
        bool,
        typer.Option(
            "--ha", help="Three NATS servers and a PostgreSQL primary with a standby (pg_auto_failover)."
        ),
    ] = False,
) -> None:
    """Start NATS, PostgreSQL (unless given) and every service; Ctrl-C stops them."""
    from drover.cli.up import run_up

    run_up(Settings(), ha=ha)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
)
def agent(ctx: typer.Context) -> None:
    """Run a client (node agent) in this terminal; `drover agent --help` lists its flags."""
    import subprocess
    import sys

    raise typer.Exit(subprocess.call([sys.executable, "-m", "drover.client", *ctx.args]))


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
)
def sim(ctx: typer.Context) -> None:
    """Host many simulated nodes in one process; `drover sim --help` lists its flags."""
    import subprocess
    import sys

    raise typer.Exit(subprocess.call([sys.executable, "-m", "drover.client.sim", *ctx.args]))


@admin.command()
def migrate() -> None:
    """Bring the database to this Drover's migration (every service refuses another)."""
    from drover.runtime.store import migrate as run_migrations
    from drover.runtime.store.migrate import SCHEMA_HEAD

    settings = _settings()
    if not settings.database_url:
        raise typer.BadParameter("set DROVER_DATABASE_URL or start `drover up` first")
    run_migrations(settings.database())
    typer.echo(f"the database is at migration {SCHEMA_HEAD}")


@admin.command()
def rebuild() -> None:
    """Replay the whole event log into fresh projections (in one transaction)."""
    from drover.runtime.store import EventStore

    settings = _settings()
    if not settings.database_url:
        raise typer.BadParameter("set DROVER_DATABASE_URL or start `drover up` first")
    store = EventStore(settings.database())
    last = store.rebuild_projections()
    store.close()
    typer.echo(f"rebuilt projections from {last} events")
