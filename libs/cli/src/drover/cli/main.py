"""`drover`: run a local cluster, operate on jobs through the API, administer the event log."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from drover.cli import events, logs, restart
from drover.runtime.settings import Settings

# Nomad's spellings of help too (`drover job restart -h`).
_HELP_NAMES = {"help_option_names": ["--help", "-h", "-help"]}
app = typer.Typer(help="Drover: a cluster scheduler with Nomad's model and API.", no_args_is_help=True)
admin = typer.Typer(help="Administer the event log and its projections.", no_args_is_help=True)
app.add_typer(admin, name="admin")
job = typer.Typer(help="Operate on jobs through the API.", no_args_is_help=True, context_settings=_HELP_NAMES)
app.add_typer(job, name="job")
job.command("restart", help=restart.HELP, no_args_is_help=True)(restart.restart)
event = typer.Typer(help="Follow the cluster's events.", no_args_is_help=True, context_settings=_HELP_NAMES)
app.add_typer(event, name="event")
event.command("tail", help=events.HELP)(events.tail)
alloc = typer.Typer(
    help="Operate on allocations through the API.", no_args_is_help=True, context_settings=_HELP_NAMES
)
app.add_typer(alloc, name="alloc")
alloc.command("logs", help=logs.HELP, no_args_is_help=True)(logs.logs)


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
def up() -> None:
    """Start NATS, PostgreSQL (unless given) and every service; Ctrl-C stops them."""
    from drover.cli.up import run_up

    run_up(Settings())


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
    run_migrations(settings.database_url)
    typer.echo(f"the database is at migration {SCHEMA_HEAD}")


@admin.command()
def rebuild() -> None:
    """Replay the whole event log into fresh projections (in one transaction)."""
    from drover.runtime.store import EventStore

    settings = _settings()
    if not settings.database_url:
        raise typer.BadParameter("set DROVER_DATABASE_URL or start `drover up` first")
    store = EventStore(settings.database_url)
    last = store.rebuild_projections()
    store.close()
    typer.echo(f"rebuilt projections from {last} events")
