"""`drover job restart`: restart a job's allocs in batches (a durable restart the servers drive),
follow it to its end, or attach to, pause, resume or cancel one already started."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from drover.cli.api import Client

EXIT_OK = 0
EXIT_ENDED_BADLY = 1  # followed to its end: the restart failed or was cancelled
EXIT_REFUSED = 2  # bad usage, or the API refused the request or could not be reached
EXIT_INTERRUPTED = 130  # Ctrl-C: detached, the restart goes on

COMPLETE = "complete"
TERMINAL = (COMPLETE, "failed", "cancelled")
# How long following rides out an API it can't reach (one restarting) before giving up.
LOST_API_GRACE = 30.0
# The options that shape a new restart: none of them goes with -attach/-pause/-resume/-cancel.
_RESTART_OPTIONS = ("batch_size", "batch_wait", "group", "task", "all_tasks", "reschedule", "on_error",
                    "health_check", "detach")  # fmt: skip
_ACTIONS = ("attach", "pause", "resume", "cancel")

HELP = """Restart a job's allocs in batches; attach to, pause, resume or cancel a restart.

drover job restart [-batch-size n|n%] [-batch-wait d] [-group g]...
    [-task t]... [-all-tasks] [-reschedule] [-on-error pause|fail]
    [-health-check] [-detach] <job>
drover job restart -attach|-pause|-resume|-cancel <restart-id>

The servers carry the restart out. This prints its ID and, unless -detach,
follows it until it ends: a progress bar on a terminal, plain lines otherwise.
Ctrl-C stops following and leaves the restart running (-attach follows again).

<restart-id> is a restart's ID or a unique prefix of it, looked up among the
restarts of every job in the namespace (one request per job);
<job>/<restart-id> looks only at that job's.

Exit codes: 0 the restart completed (-detach: it started; -pause, -resume,
-cancel: done); 1 the restart followed failed or was cancelled; 2 bad usage,
or the API refused the request (its message is printed) or could not be
reached; 130 Ctrl-C detached from the restart.
"""


def _opt(name: str, help: str, **kw: Any) -> Any:
    """An option spelt as Nomad's (-name) and as is usual (--name)."""
    return typer.Option(f"-{name}", f"--{name}", help=help, **kw)


_RID = "<restart-id>"


def restart(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(metavar="<job>", show_default=False)] = None,
    batch_size: Annotated[str, _opt("batch-size", "Allocs per batch.", metavar="n|n%")] = "1",
    batch_wait: Annotated[str, _opt("batch-wait", 'Wait between batches ("30s").', metavar="d")] = "0s",
    group: Annotated[
        list[str] | None, _opt("group", "Only this group's allocs (repeat it).", metavar="g")
    ] = None,
    task: Annotated[
        list[str] | None, _opt("task", "Restart only this task (repeat it).", metavar="t")
    ] = None,
    all_tasks: Annotated[bool, _opt("all-tasks", "Restart every task, not only the running.")] = False,
    reschedule: Annotated[bool, _opt("reschedule", "Replace the allocs instead of in place.")] = False,
    on_error: Annotated[
        str, _opt("on-error", "What an alloc's failure does.", metavar="pause|fail")
    ] = "pause",
    health_check: Annotated[bool, _opt("health-check", "A batch is done once it is healthy.")] = False,
    detach: Annotated[bool, _opt("detach", "Print the restart's ID and exit: don't follow it.")] = False,
    attach: Annotated[str | None, _opt("attach", "Follow a restart.", metavar=_RID)] = None,
    pause: Annotated[str | None, _opt("pause", "Hold a restart's next batch.", metavar=_RID)] = None,
    resume: Annotated[str | None, _opt("resume", "Go on with a paused restart.", metavar=_RID)] = None,
    cancel: Annotated[str | None, _opt("cancel", "End a restart for good.", metavar=_RID)] = None,
    address: Annotated[
        str, _opt("address", "The API's address.", envvar=["DROVER_ADDR", "NOMAD_ADDR"])
    ] = "http://127.0.0.1:4646",
    namespace: Annotated[
        str, _opt("namespace", "The job's namespace.", envvar=["DROVER_NAMESPACE", "NOMAD_NAMESPACE"])
    ] = "default",
) -> None:
    """Restart a job's allocs, or act on a restart (HELP says how)."""
    from drover.cli.api import ApiError, Client

    actions = {name: value for name, value in zip(_ACTIONS, (attach, pause, resume, cancel), strict=True)}
    try:
        action, target = _check_usage(ctx, job, {k: v for k, v in actions.items() if v is not None})
    except UsageProblem as e:
        Console(stderr=True, soft_wrap=True).print(
            f"{ctx.get_usage()}\nTry 'drover job restart -h' for help.\n", markup=False
        )
        _error(str(e))
        raise typer.Exit(EXIT_REFUSED) from None
    client = Client(address, namespace)
    console = Console(highlight=False, soft_wrap=True)
    try:
        if action:
            code = _act(client, console, action, target)
        else:
            body = {"BatchSize": _batch_size(batch_size), "BatchWait": batch_wait, "Groups": group or [],
                    "Tasks": task or [], "AllTasks": all_tasks, "Reschedule": reschedule, "OnError": on_error,
                    "HealthCheck": health_check}  # fmt: skip
            code = _start(client, console, target, body, detach)
    except (ApiError, UsageProblem) as e:
        _error(str(e))
        code = EXIT_REFUSED
    finally:
        client.close()
    raise typer.Exit(code)


class UsageProblem(Exception):
    """The command line asks for something that can't be done as asked."""


def _check_usage(ctx: typer.Context, job: str | None, actions: dict[str, str]) -> tuple[str, str]:
    """(the action on an existing restart or "", the job or restart ID it is about)."""
    if len(actions) > 1:
        raise UsageProblem(f"only one of {_flags(actions)} at a time")
    if not actions:
        if not job:
            raise UsageProblem("give a job to restart, or -attach|-pause|-resume|-cancel <restart-id>")
        return "", job
    (action, target), = actions.items()  # fmt: skip
    if job:
        raise UsageProblem(f"-{action} takes a restart ID, not a job as well ({job!r})")
    given = [n for n in _RESTART_OPTIONS if _source(ctx, n) == "COMMANDLINE"]
    if given:
        raise UsageProblem(f"{_flags(given)} only go with a job to restart, not with -{action}")
    return action, target


def _source(ctx: typer.Context, name: str) -> str:
    """Where a parameter's value came from ("COMMANDLINE", "DEFAULT", ...)."""
    source = ctx.get_parameter_source(name)
    return source.name if source is not None else ""


def _flags(names: Any) -> str:
    return ", ".join("-" + n.replace("_", "-") for n in names)


def _batch_size(value: str) -> int | str:
    """A count as a number; a percentage (or anything else) as written, for the API to judge."""
    text = value.strip()
    return int(text) if text.isdigit() and text.isascii() else text


def _error(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"Error: {message}", markup=False)


def _start(client: Client, console: Console, job: str, body: dict[str, Any], detach: bool) -> int:
    restart_id = client.start_restart(job, body)
    console.print(f"Restart ID: {restart_id}", markup=False)
    if detach:
        console.print(f"Follow it: drover job restart -attach {restart_id}", markup=False)
        return EXIT_OK
    return _follow(client, console, job, restart_id)


def _act(client: Client, console: Console, action: str, target: str) -> int:
    job, restart_id = _find(client, target)
    if action == "attach":
        console.print(f"Restart ID: {restart_id}", markup=False)
        return _follow(client, console, job, restart_id)
    call = {"pause": client.pause_restart, "resume": client.resume_restart, "cancel": client.cancel_restart}
    call[action](job, restart_id)
    done = {"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"}[action]
    console.print(f"{done} restart {restart_id} of job {job!r}", markup=False)
    return EXIT_OK


def _find(client: Client, target: str) -> tuple[str, str]:
    """(job, restart ID) of `target`: <restart-id> or <job>/<restart-id>, the ID or a unique
    prefix of it, among the job's restarts or those of every job in the namespace."""
    from drover.cli.api import ApiError

    job, _, prefix = target.rpartition("/")
    if not prefix:
        raise UsageProblem(f"{target!r} names no restart ID")
    jobs = [job] if job else [j["ID"] for j in client.jobs()]
    found: list[tuple[str, str]] = []
    for j in jobs:
        try:
            found += [(j, r["ID"]) for r in client.restarts(j) if r["ID"].startswith(prefix)]
        except ApiError as e:
            if e.status != 404 or job:  # a job purged since the listing has no restarts
                raise
    if not found:
        where = f"job {job!r}" if job else f"namespace {client.namespace!r}"
        raise ApiError(404, f"no restart with ID {prefix!r} in {where}")
    if len(found) > 1:
        ids = ", ".join(f"{j}/{r}" for j, r in found)
        raise UsageProblem(f"restart ID {prefix!r} is ambiguous: {ids}")
    return found[0]


def _follow(client: Client, console: Console, job: str, restart_id: str) -> int:
    """Follow the restart with blocking queries until it ends; its exit code."""
    display: _Lines | _Bar = _Bar(console) if console.is_terminal else _Lines(console)
    try:
        with display:
            r = _watch(client, display, job, restart_id)
    except KeyboardInterrupt:
        _error(f"Detached; the restart goes on: drover job restart -attach {restart_id}")
        return EXIT_INTERRUPTED
    line = f"Restart {r['ID']} {r['Status']}"
    console.print(f"{line}: {r['StatusDescription']}" if r["StatusDescription"] else line, markup=False)
    return EXIT_OK if r["Status"] == COMPLETE else EXIT_ENDED_BADLY


def _watch(client: Client, display: _Lines | _Bar, job: str, restart_id: str) -> dict[str, Any]:
    """Show the restart each time it changes, until it ends; the ended restart."""
    from drover.cli.api import ApiError

    index, lost_at = 0, 0.0
    while True:
        try:
            r, index = client.restart(job, restart_id, index)
        except ApiError as e:
            # An API restarting (unreachable, or failing) is ridden out; a refusal, or an API
            # gone too long, is not.
            lost_at = lost_at or time.monotonic()
            if 0 < e.status < 500 or time.monotonic() - lost_at > LOST_API_GRACE:
                raise
            time.sleep(1.0)
            continue
        lost_at = 0.0
        display.show(r, _total(client, job, r))
        if r["Status"] in TERMINAL:
            return r


def _total(client: Client, job: str, r: dict[str, Any]) -> int:
    """The allocs the restart restarts: those restarted so far, and the live ones of its groups
    created before it that it has yet to restart (as the job restart watcher chooses them)."""
    live = {
        a["ID"]
        for a in client.job_allocs(job)
        if a["DesiredStatus"] == "run"
        and a["ClientStatus"] not in ("complete", "failed", "lost")
        and a["CreateIndex"] <= r["CreateIndex"]
        and (not r["Groups"] or a["TaskGroup"] in r["Groups"])
    }
    return len(live | set(r["RestartedAllocs"]))


def _batch(r: dict[str, Any], total: int) -> str:
    """ "Batch 2 of 3" (the count of batches as it looks now), "... done" once the batch is, or
    "Starting"."""
    n, size = r["BatchNumber"], max(1, r["BatchSize"])
    if not n:
        return f"Starting ({math.ceil(total / size)} batches)"
    batches = n + math.ceil((total - len(r["RestartedAllocs"])) / size)
    return f"Batch {n} of {batches}{' done' if r['BatchDoneAt'] else ''}"


def _status(r: dict[str, Any]) -> str:
    """The status, and why while it is not running (paused on an error, say)."""
    status: str = r["Status"]
    desc = r["StatusDescription"]
    return f"{status}: {desc}" if desc and status not in TERMINAL and status != "running" else status


class _Lines:
    """Progress as plain lines, one each time what it shows changed (output not a terminal)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.last = ""

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def show(self, r: dict[str, Any], total: int) -> None:
        line = f"{_batch(r, total)}: restarted {len(r['RestartedAllocs'])} of {total} allocs, {_status(r)}"
        if line != self.last:
            self.console.print(f"{time.strftime('%H:%M:%S')} {line}", markup=False)
            self.last = line


class _Bar:
    """Progress as a Rich bar of the allocs restarted (output a terminal)."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TextColumn("{task.fields[allocs]}"),
            TextColumn("{task.fields[status]}", markup=False),
            TimeElapsedColumn(),
            console=console,
        )
        self.task = self.progress.add_task("Starting", total=None, allocs="", status="")

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def show(self, r: dict[str, Any], total: int) -> None:
        self.progress.update(
            self.task,
            description=_batch(r, total),
            completed=len(r["RestartedAllocs"]),
            total=total,
            allocs=f"{len(r['RestartedAllocs'])} of {total} allocs restarted",
            status=_status(r),
        )
