"""`drover job status|inspect|history|stop|revert|scale|dispatch|periodic force`: reading and
acting on registered jobs, laid out as Nomad's CLI lays them out."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from drover.cli import monitor
from drover.cli.api import ApiError, Client, seg
from drover.cli.common import (
    ADDRESS,
    ALL_NAMESPACES,
    NAMESPACE,
    Address,
    Detach,
    Filter,
    Json,
    Namespace,
    Problem,
    Verbose,
    client,
    confirm,
    diff_text,
    echo,
    filtered,
    matches,
    opt,
    resolve,
    verb,
)
from drover.cli.output import ago, date, failed_placements, kv, short, table
from drover.cli.output import as_json as to_json

SUMMARY_STATES = ("Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown")


def job_list_table(jobs: list[dict[str, Any]], namespaces: bool = False) -> str:
    """The jobs as Nomad lists them; `namespaces`: with each one's (a list of every namespace)."""
    if namespaces:
        return table(
            ["ID", "Namespace", "Type", "Priority", "Status", "Submit Date"],
            [[j["ID"], j.get("Namespace", ""), j["Type"], j["Priority"], j["Status"], date(j.get("SubmitTime", 0))]
             for j in jobs],
        )  # fmt: skip
    return table(
        ["ID", "Type", "Priority", "Status", "Submit Date"],
        [[j["ID"], j["Type"], j["Priority"], j["Status"], date(j.get("SubmitTime", 0))] for j in jobs],
    )


def allocs_table(allocs: list[dict[str, Any]], verbose: bool = False, now: float | None = None) -> str:
    """A job's or node's allocs, newest first, with Nomad's columns."""
    rows = sorted(allocs, key=lambda a: a.get("CreateIndex", 0), reverse=True)
    return table(
        ["ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created", "Modified"],
        [
            [
                short(a["ID"], verbose),
                short(a["NodeID"], verbose),
                a["TaskGroup"],
                a.get("JobVersion", 0),
                a["DesiredStatus"],
                a["ClientStatus"],
                ago(a.get("CreateTime", 0), now),
                ago(a.get("ModifyTime", 0), now),
            ]
            for a in rows
        ],
    )


def summary_table(summary: dict[str, Any]) -> str:
    groups = summary.get("Summary") or {}
    return table(
        ["Task Group", *SUMMARY_STATES],
        [[g, *(groups[g].get(s, 0) for s in SUMMARY_STATES)] for g in sorted(groups)],
    )


def job_head(job: dict[str, Any]) -> str:
    return kv(
        [
            ("ID", job["ID"]),
            ("Name", job.get("Name") or job["ID"]),
            ("Submit Date", date(job.get("SubmitTime", 0))),
            ("Type", job["Type"]),
            ("Priority", job["Priority"]),
            ("Datacenters", ",".join(job.get("Datacenters") or [])),
            ("Namespace", job.get("Namespace", "default")),
            ("Node Pool", job.get("NodePool") or "default"),
            ("Status", job["Status"]),
            ("Periodic", bool(job.get("Periodic"))),
            ("Parameterized", bool(job.get("ParameterizedJob"))),
        ]
    )


@verb()
def status(
    job_id: Annotated[str | None, typer.Argument(metavar="[<job>]", show_default=False)] = None,
    all_allocs: Annotated[bool, opt("all-allocs", "List the allocs of every version.")] = False,
    filter_: Filter = "",
    as_json: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """List the jobs, or show one: its summary, latest deployment, placement failures, allocs."""
    with client(address, namespace) as c:
        if job_id is None:
            jobs = c.get("/v1/jobs", **filtered(filter_))
            listed = job_list_table(jobs, namespace == ALL_NAMESPACES) if jobs else "No running jobs"
            echo(to_json(jobs) if as_json else listed)
            return
        found = matches(c, "job", job_id)
        if len(found) > 1:
            echo(f"Prefix matched multiple jobs\n\n{job_list_table(found, namespace == ALL_NAMESPACES)}")
            raise typer.Exit(1)
        if not found:
            raise ApiError(404, f'No job with prefix or ID "{job_id}" found')
        job_id = found[0]["ID"]
        if as_json:
            echo(to_json(_job_doc(c, job_id)))
            return
        echo(job_detail(c, job_id, verbose, all_allocs))


def _job_doc(c: Client, job_id: str) -> dict[str, Any]:
    """What `job status -json` prints of a job: the job and what its status shows."""
    p = f"/v1/job/{seg(job_id)}"
    return {
        "Job": c.get(p),
        "Summary": c.get(f"{p}/summary"),
        "Allocations": c.get(f"{p}/allocations"),
        "Evaluations": c.get(f"{p}/evaluations"),
        "LatestDeployment": c.get(f"{p}/deployment"),
    }


def job_detail(c: Client, job_id: str, verbose: bool = False, all_allocs: bool = False) -> str:
    p = f"/v1/job/{seg(job_id)}"
    job = c.get(p)
    parts = [job_head(job)]
    if job.get("Periodic") or job.get("ParameterizedJob"):
        parts.append(_children(c, job))
    else:
        parts.append("Summary\n" + summary_table(c.get(f"{p}/summary")))
    failures = _placement_failures(c.get(f"{p}/evaluations"))
    if failures:
        parts.append("Placement Failure\n" + "\n".join(failures))
    deployment = c.get(f"{p}/deployment") if job["Type"] == "service" else None
    if deployment:
        head = kv(
            [
                ("ID", short(deployment["ID"], verbose)),
                ("Status", deployment["Status"]),
                ("Description", deployment["StatusDescription"]),
            ]
        )
        parts.append(f"Latest Deployment\n{head}\n\nDeployed\n{monitor.deployment_table(deployment)}")
    allocs = c.get(f"{p}/allocations")
    if not all_allocs:
        allocs = [
            a
            for a in allocs
            if a.get("JobVersion", 0) == job.get("Version", 0) or a["DesiredStatus"] == "run"
        ]
    if not (job.get("Periodic") or job.get("ParameterizedJob")):
        parts.append("Allocations\n" + (allocs_table(allocs, verbose) if allocs else "No allocations placed"))
    return "\n\n".join(parts)


def _children(c: Client, job: dict[str, Any]) -> str:
    kids = [j for j in c.get("/v1/jobs", prefix=f"{job['ID']}/") if j.get("ParentID") == job["ID"]]
    title = "Previously Launched Jobs" if job.get("Periodic") else "Dispatched Jobs"
    rows = [[j["ID"], j["Status"]] for j in sorted(kids, key=lambda j: j.get("SubmitTime", 0), reverse=True)]
    return f"{title}\n" + (table(["ID", "Status"], rows) if rows else f"No {title.lower()}")


def _placement_failures(evals: list[dict[str, Any]]) -> list[str]:
    """Why the job's allocs wait for capacity: the failures of the eval that made the blocked one."""
    blocked = {e["ID"] for e in evals if e["Status"] == "blocked"}
    for e in sorted(evals, key=lambda e: e.get("CreateIndex", 0), reverse=True):
        if e.get("BlockedEval") in blocked and e.get("FailedTGAllocs"):
            return failed_placements(e["FailedTGAllocs"])
    return []


@verb()
def inspect(
    job_id: Annotated[str, typer.Argument(metavar="<job>")],
    version: Annotated[int | None, opt("version", "That version of the job.")] = None,
    as_json: Json = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Print the job as the API holds it ({"Job": ...}), or one of its versions."""
    with client(address, namespace) as c:
        job_id = resolve(c, "job", job_id)["ID"]
        if version is None:
            job = c.get(f"/v1/job/{seg(job_id)}")
        else:
            found = [
                v for v in c.get(f"/v1/job/{seg(job_id)}/versions")["Versions"] if v["Version"] == version
            ]
            if not found:
                raise ApiError(404, f'job "{job_id}" has no version {version}')
            job = found[0]
        echo(to_json({"Job": job}))


@verb()
def history(
    job_id: Annotated[str, typer.Argument(metavar="<job>")],
    p: Annotated[bool, opt("p", "Show each version's changes from the one before.")] = False,
    version: Annotated[int | None, opt("version", "Only this version.")] = None,
    as_json: Json = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """List the job's versions, newest first (with -p, each one's diff)."""
    with client(address, namespace) as c:
        job_id = resolve(c, "job", job_id)["ID"]
        doc = c.get(f"/v1/job/{seg(job_id)}/versions", diffs="true" if p else "false")
        versions = doc.get("Versions") or []
        diffs = doc.get("Diffs") or []
        if version is not None:
            keep = [i for i, v in enumerate(versions) if v["Version"] == version]
            if not keep:
                raise ApiError(404, f'job "{job_id}" has no version {version}')
            versions, diffs = [versions[keep[0]]], diffs[keep[0] : keep[0] + 1]
        if as_json:
            echo(to_json(versions))
            return
        echo(
            "\n\n".join(
                _version_block(v, diffs[i] if i < len(diffs) else None, p) for i, v in enumerate(versions)
            )
        )


def _version_block(v: dict[str, Any], diff: Any, with_diff: bool) -> str:
    head = [
        ("Version", v["Version"]),
        ("Stable", bool(v.get("Stable"))),
        ("Submit Date", date(v.get("SubmitTime", 0))),
    ]
    block = kv(head)
    if with_diff and diff:
        block += "\nDiff =\n" + diff_text(diff)
    return block


@verb()
def stop(
    job_id: Annotated[str, typer.Argument(metavar="<job>")],
    purge: Annotated[bool, opt("purge", "Forget the job once stopped (no history kept in the API).")] = False,
    detach: Detach = False,
    verbose: Verbose = False,
    yes: Annotated[bool, opt("yes", "Don't ask for confirmation when <job> is a prefix.")] = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Stop a job's allocs (deregister it); -purge forgets it too. Follows the eval unless -detach."""
    with client(address, namespace) as c:
        full = resolve(c, "job", job_id)["ID"]
        if full != job_id:
            confirm(f'Are you sure you want to stop job "{full}"?', yes)
        r = c.delete(f"/v1/job/{seg(full)}", purge="true" if purge else "false")
        _then_follow(c, r.get("EvalID", ""), detach, verbose)


def _then_follow(c: Client, eval_id: str, detach: bool, verbose: bool) -> None:
    """Print the eval's ID (-detach) or follow it to its end; exit with the outcome's code."""
    if not eval_id:
        return
    if detach:
        echo(f"Evaluation ID: {eval_id}")
        return
    code = monitor.follow(c, eval_id, verbose)
    if code:
        raise typer.Exit(code)


@verb()
def revert(
    job_id: Annotated[str, typer.Argument(metavar="<job>")],
    version: Annotated[int, typer.Argument(metavar="<version>")],
    detach: Detach = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Register an earlier version of the job again (as a new version)."""
    with client(address, namespace) as c:
        job_id = resolve(c, "job", job_id)["ID"]
        r = c.post(f"/v1/job/{seg(job_id)}/revert", {"JobID": job_id, "JobVersion": version})
        _then_follow(c, r.get("EvalID", ""), detach, verbose)


@verb()
def scale(
    job_id: Annotated[str, typer.Argument(metavar="<job>")],
    group_or_count: Annotated[str, typer.Argument(metavar="[<group>] <count>")],
    count: Annotated[int | None, typer.Argument(metavar="", show_default=False)] = None,
    detach: Detach = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Set a group's count (the group may be left out when the job has one)."""
    with client(address, namespace) as c:
        job_id = resolve(c, "job", job_id)["ID"]
        if count is None:
            groups = [g["Name"] for g in c.get(f"/v1/job/{seg(job_id)}")["TaskGroups"]]
            if len(groups) != 1:
                raise Problem(f"job {job_id!r} has {len(groups)} groups: name the one to scale")
            group, text = groups[0], group_or_count
        else:
            group, text = group_or_count, str(count)
        if not text.isdigit():
            raise Problem(f"the count must be a whole number, not {text!r}")
        r = c.post(f"/v1/job/{seg(job_id)}/scale", {"Count": int(text), "Target": {"Group": group}})
        _then_follow(c, r.get("EvalID", ""), detach, verbose)


def _meta(pairs: list[str]) -> dict[str, str]:
    meta = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise Problem(f"-meta takes key=value, not {pair!r}")
        meta[key] = value
    return meta


@verb()
def dispatch(
    job_id: Annotated[str, typer.Argument(metavar="<parameterized job>")],
    input_source: Annotated[
        str | None, typer.Argument(metavar="[<input source>]", show_default=False)
    ] = None,
    meta: Annotated[list[str] | None, opt("meta", "Metadata key=value (repeat it).", metavar="k=v")] = None,
    idempotency_token: Annotated[str, opt("idempotency-token", "Dispatch once per token.")] = "",
    detach: Detach = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Dispatch a parameterized job: a child job with the payload (a file, or - for stdin)."""
    payload = b""
    if input_source == "-":
        payload = sys.stdin.buffer.read()
    elif input_source:
        try:
            payload = Path(input_source).read_bytes()
        except OSError as e:
            raise Problem(f"can't read the payload {input_source!r}: {e.strerror}") from None
    body: dict[str, Any] = {"Meta": _meta(meta or [])}
    if payload:
        body["Payload"] = base64.b64encode(payload).decode()
    with client(address, namespace) as c:
        params = {"idempotency_token": idempotency_token} if idempotency_token else {}
        r = c.post(f"/v1/job/{seg(job_id)}/dispatch", body, **params)
        echo(
            kv([("Dispatched Job ID", r["DispatchedJobID"]), ("Evaluation ID", short(r["EvalID"], verbose))])
        )
        if r.get("EvalID") and not detach:
            echo()
            _then_follow(c, r["EvalID"], False, verbose)


@verb()
def periodic_force(
    job_id: Annotated[str, typer.Argument(metavar="<job>")],
    detach: Detach = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Launch a periodic job now, whatever its schedule."""
    with client(address, namespace) as c:
        job_id = resolve(c, "job", job_id)["ID"]
        r = c.post(f"/v1/job/{seg(job_id)}/periodic/force")
        _then_follow(c, r.get("EvalID", ""), detach, verbose)
