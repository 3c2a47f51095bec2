"""`drover job run|plan|validate|init`: jobspec files (HCL2 through drover.jobspec, or the API's
JSON) submitted, planned, checked, or started from an example."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from drover.cli import monitor
from drover.cli.api import ApiError, seg
from drover.cli.common import (
    ADDRESS,
    EXIT_PLAN_ERROR,
    NAMESPACE,
    Address,
    Detach,
    Json,
    Namespace,
    Problem,
    Verbose,
    client,
    diff_text,
    echo,
    error,
    opt,
    verb,
)
from drover.cli.output import as_json as to_json
from drover.cli.output import failed_placements

if TYPE_CHECKING:
    from drover import jobspec

Var = Annotated[
    list[str] | None, opt("var", "A variable of the jobspec, key=value (repeat it).", metavar="k=v")
]
VarFile = Annotated[
    list[str] | None, opt("var-file", "A file of variables (HCL), repeat it.", metavar="file")
]
JobFile = Annotated[str, typer.Argument(metavar="<path>", help="The jobspec: HCL, or JSON; - reads stdin.")]


def _variables(pairs: list[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise Problem(f"-var takes key=value, not {pair!r}")
        found[key.strip()] = value
    return found


def _read(path: str) -> str:
    if path == "-":
        return typer.get_text_stream("stdin").read()
    try:
        return Path(path).read_text()
    except OSError as e:
        raise Problem(f"can't read {path}: {e.strerror}") from None


def load_job(
    path: str, variables: list[str] | None = None, var_files: list[str] | None = None
) -> dict[str, Any]:
    """The job of a jobspec file, as the API's JSON: JSON as it is (with or without its "Job"
    wrapper), HCL through drover.jobspec with the variables given (-var, -var-file, NOMAD_VAR_*)."""
    src = _read(path)
    if path.endswith(".json") or src.lstrip().startswith("{"):
        try:
            doc = json.loads(src)
        except json.JSONDecodeError as e:
            raise Problem(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
        job = doc.get("Job", doc) if isinstance(doc, dict) else doc
        if not isinstance(job, dict):
            raise Problem(f"{path}: a job is a JSON object")
        return job
    return _parse_hcl(path, src, _variables(variables or []), var_files or [])


def _parse_hcl(path: str, src: str, variables: dict[str, str], var_files: list[str]) -> dict[str, Any]:
    from drover import jobspec

    var_texts = [(f, _read_var_file(f)) for f in var_files]
    try:
        return jobspec.parse(
            src,
            filename=path,
            variables=variables,
            var_files=var_texts,
            env=dict(os.environ),
            files=_local_files(),
            random=os.urandom,
        )
    except jobspec.JobspecError as e:
        raise Problem("\n".join(["the jobspec is invalid:", *e.problems])) from None


def _local_files() -> jobspec.Files:
    """This machine's files as the jobspec's filesystem functions see them, as Nomad's CLI
    lets them see (its API does not)."""
    from drover import jobspec

    def kind(path: str) -> str | None:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return None
        return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"

    home = os.path.expanduser("~")  # "~" itself when there is none
    return jobspec.Files(
        read=lambda p: Path(p).read_bytes(),
        kind=kind,
        listdir=os.listdir,
        cwd=os.getcwd(),
        home="" if home == "~" else home,
    )


def _read_var_file(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise Problem(f"can't read the variables file {path}: {e.strerror}") from None


@verb()
def run(
    path: JobFile,
    var: Var = None,
    var_file: VarFile = None,
    detach: Detach = False,
    check_index: Annotated[
        int | None, opt("check-index", "Run only if the job's modify index is this.")
    ] = None,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Submit a job and follow it: the eval, then the deployment, until done (-detach: don't).

    Exit codes: 0 done; 1 an error, or the eval or the deployment failed; 2 some allocs could
    not be placed (the reasons are printed)."""
    job = load_job(path, var, var_file)
    with client(address, job.get("Namespace") or namespace) as c:
        body: dict[str, Any] = {"Job": job}
        if check_index is not None:
            body |= {"EnforceIndex": True, "JobModifyIndex": check_index}
        r = c.put("/v1/jobs", body)
        if r.get("Warnings"):
            echo(f"Job Warnings:\n{r['Warnings']}\n")
        eval_id = r.get("EvalID") or ""
        if not eval_id:
            echo(
                f'Job registration successful (job "{job.get("ID")}" has no eval: periodic or parameterized)'
            )
            return
        if detach:
            echo(f"Job registration successful\nEvaluation ID: {eval_id}")
            return
        code = monitor.follow(c, eval_id, verbose)
    if code:
        raise typer.Exit(code)


# What a group's DesiredTGUpdates count, as Nomad's plan words them, in its order.
_UPDATES = (
    ("Place", "create"),
    ("Migrate", "migrate"),
    ("InPlaceUpdate", "in-place update"),
    ("DestructiveUpdate", "create/destroy update"),
    ("Stop", "destroy"),
    ("Canary", "canary"),
    ("Ignore", "ignore"),
)
# What changes allocs: `job plan` exits 1 when any is above 0.
CHANGES = ("Place", "Migrate", "DestructiveUpdate", "Stop", "Canary")


def group_updates(updates: dict[str, int]) -> str:
    """ "1 create, 2 ignore": what the plan does to a group's allocs."""
    return ", ".join(f"{updates[k]} {word}" for k, word in _UPDATES if updates.get(k))


def plan_changes(plan: dict[str, Any]) -> bool:
    groups = ((plan.get("Annotations") or {}).get("DesiredTGUpdates") or {}).values()
    return any(u.get(k, 0) > 0 for u in groups for k in CHANGES)


def plan_text(plan: dict[str, Any], job_id: str, path: str, verbose: bool = False) -> str:
    """The plan as Nomad prints it: the diff (or each group's updates), the dry-run's placements,
    the job's warnings, and the `job run -check-index` hint."""
    parts = [_diff_or_updates(plan, job_id, verbose), "Scheduler dry-run:"]
    failed = plan.get("FailedTGAllocs") or {}
    if failed:
        parts[-1] += "\n- WARNING: Failed to place all allocations.\n" + "\n".join(
            f"  {line}" for line in failed_placements(failed)
        )
    else:
        parts[-1] += "\n- All tasks successfully allocated."
    if plan.get("Warnings"):
        parts.append(f"Job Warnings:\n{plan['Warnings']}")
    index = plan.get("JobModifyIndex", 0)
    parts.append(
        f"Job Modify Index: {index}\nTo submit the job with version verification run:\n\n"
        f"drover job run -check-index {index} {path}\n\n"
        "When running the job with the check-index flag, the job will only be run if the\n"
        "job modify index given matches the server-side version. If the index has\n"
        "changed, another user has modified the job and the plan's results are\n"
        "potentially invalid."
    )
    return "\n\n".join(parts)


def _diff_or_updates(plan: dict[str, Any], job_id: str, verbose: bool) -> str:
    updates = (plan.get("Annotations") or {}).get("DesiredTGUpdates") or {}
    diff = plan.get("Diff")
    if diff:
        return diff_text(diff, verbose).rstrip("\n")
    lines = [f'Job: "{job_id}"']
    lines += [f'Task Group: "{g}" ({group_updates(u) or "no change"})' for g, u in sorted(updates.items())]
    return "\n".join(lines)


@verb(code=EXIT_PLAN_ERROR)
def plan(
    path: JobFile,
    var: Var = None,
    var_file: VarFile = None,
    diff: Annotated[
        bool, typer.Option("-diff/-no-diff", "--diff/--no-diff", help="Show the job's diff.")
    ] = True,
    as_json: Json = False,
    verbose: Verbose = False,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Dry-run a job: what the scheduler would do with it, and its diff; commits nothing.

    Exit codes: 0 no allocs would be created or destroyed; 1 some would; 255 an error."""
    job = load_job(path, var, var_file)
    job_id = str(job.get("ID", ""))
    if not job_id:
        raise Problem("the job has no ID")
    with client(address, job.get("Namespace") or namespace) as c:
        r = c.put(f"/v1/job/{seg(job_id)}/plan", {"Job": job, "Diff": diff})
    echo(to_json(r) if as_json else plan_text(r, job_id, path, verbose))
    raise typer.Exit(1 if plan_changes(r) else 0)


@verb()
def validate(
    path: JobFile,
    var: Var = None,
    var_file: VarFile = None,
    address: Address = ADDRESS,
    namespace: Namespace = NAMESPACE,
) -> None:
    """Check a jobspec: parsed here, then validated by the API (or here, when it can't be asked)."""
    job = load_job(path, var, var_file)
    with client(address, job.get("Namespace") or namespace) as c:
        try:
            r = c.post("/v1/validate/job", {"Job": job})
        except ApiError as e:
            if e.status not in (0, 404, 405):
                raise
            _validate_here(job)
        else:
            problems = r.get("ValidationErrors") or ([r["Error"]] if r.get("Error") else [])
            if problems:
                raise Problem("\n".join(["Job validation errors:", *map(str, problems)]))
            if r.get("Warnings"):
                echo(f"Job Warnings:\n{r['Warnings']}\n")
    echo("Job validation successful")


def _validate_here(job: dict[str, Any]) -> None:
    """Validate as the API would, with the model's own checks (no API to ask)."""
    from pydantic import ValidationError

    from drover.control.commands import jobs
    from drover.control.errors import Invalid
    from drover.model import Job

    try:
        jobs.prepare(Job.model_validate(job))
    except ValidationError as e:
        problems = [f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()]
        raise Problem("\n".join(["Job validation errors:", *problems])) from None
    except Invalid as e:
        problems = [line for line in str(e).splitlines() if line != "Job is invalid:"]
        raise Problem("\n".join(["Job validation errors:", *problems])) from None


@verb()
def init(
    filename: Annotated[str, typer.Argument(metavar="[<filename>]")] = "example.nomad.hcl",
    short_spec: Annotated[bool, opt("short", "A minimal jobspec, without comments.")] = False,
    as_json: Json = False,
) -> None:
    """Write an example jobspec (HCL, or JSON with -json) to start from."""
    from drover.cli.examples import EXAMPLE_HCL, EXAMPLE_JSON, SHORT_HCL

    if as_json and filename == "example.nomad.hcl":
        filename = "example.nomad.json"
    target = Path(filename)
    if target.exists():
        raise Problem(f'Job "{filename}" already exists')
    text = (
        json.dumps(EXAMPLE_JSON, indent=2) + "\n" if as_json else (SHORT_HCL if short_spec else EXAMPLE_HCL)
    )
    try:
        target.write_text(text)
    except OSError as e:
        error(f"can't write {filename}: {e.strerror}")
        raise typer.Exit(1) from None
    echo(f"Example job file written to {filename}")
