"""The jobspec as a whole: variables and locals first, then the one `job` block, decoded and
normalized as Nomad's jobspec2 normalizes it."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from drover.jobspec import variables as variables_
from drover.jobspec.context import Context
from drover.jobspec.decode import Decoder
from drover.jobspec.errors import JobspecError, Problems
from drover.jobspec.functions import Files, Random, functions
from drover.jobspec.schema import JOB
from drover.jobspec.syntax import Body, parse_body

_TOP_LEVEL = ("job", "variable", "variables", "locals")


def parse(
    src: str,
    *,
    filename: str = "job.nomad.hcl",
    variables: Mapping[str, str] = {},
    var_files: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] = {},
    files: Files | None = None,
    random: Random | None = None,
) -> dict[str, Any]:
    """The job `src` describes, as Nomad's API JSON (not wrapped in {"Job": ...}).

    `variables` are -var values, `var_files` the (filename, content) of each -var-file in
    order, `env` the environment (its NOMAD_VAR_* entries), `files` what the filesystem
    functions see, a relative path taken from the directory of `filename` (None refuses
    them, as Nomad's API does), `random` the randomness bcrypt() and uuidv4() take (None
    refuses them). Raises JobspecError listing every problem found."""
    try:
        return _parse(src, filename, variables, var_files, env, files, random)
    except RecursionError:
        raise JobspecError([f"{filename}:1: job: expressions or blocks nested too deep"]) from None


def _parse(
    src: str,
    filename: str,
    variables: Mapping[str, str],
    var_files: Sequence[tuple[str, str]],
    env: Mapping[str, str],
    files: Files | None,
    random: Random | None,
) -> dict[str, Any]:
    body = parse_body(src, filename)
    problems = Problems()
    ctx = Context(filename, functions=functions(files, posixpath.dirname(filename), random))
    _check_top_level(body, filename, problems)
    declared = variables_.declare(
        [b for b in body.blocks if b.type in ("variable", "variables")], ctx, problems
    )
    variables_.assign(declared, filename, variables, var_files, env, problems)
    ctx.variables = variables_.check(declared, ctx, problems)
    locals_ = variables_.Locals(variables_.local_attributes(body), ctx, problems)
    ctx.local_value = locals_.get
    locals_.check_all(problems)
    # As Nomad does, stop before the job when the variables or locals are wrong: their errors
    # would come back once for every use.
    problems.raise_if_any()
    jobs = [b for b in body.blocks if b.type == "job"]
    if not jobs:
        problems.add(filename, 1, "job", 'no job block (a jobspec holds one job "<id>" { ... })')
    for extra in jobs[1:]:
        problems.add(
            filename,
            extra.line,
            "job",
            f"only one job block is allowed (the first is at line {jobs[0].line})",
        )
    problems.raise_if_any()
    block = jobs[0]
    where = f"job[{block.labels[0]}]" if len(block.labels) == 1 else "job"
    job = Decoder(ctx, problems).block(block, JOB, where, {})
    problems.raise_if_any()
    assert job is not None
    return normalize(job)


def _check_top_level(body: Body, filename: str, problems: Problems) -> None:
    for attr in body.attributes:
        problems.add(filename, attr.line, attr.name, "unsupported argument here (a jobspec holds blocks)")
    for block in body.blocks:
        if block.type not in _TOP_LEVEL:
            problems.add(
                filename, block.line, block.type, f"unsupported block type {block.type!r} at the top level"
            )


def normalize(job: dict[str, Any]) -> dict[str, Any]:
    """Nomad's normalizeJob: ID and Name from the label, a group for each task written in the
    job itself, the job's vault block on the tasks that have none, the default identity
    apart."""
    job = {"ID": job["ID"], "Name": job.get("Name", job["ID"]), **job}
    vault = job.pop("_Vault", None)
    alone = [{"Name": t["Name"], "Tasks": [t]} for t in job.pop("_Tasks", [])]
    if alone:
        job["TaskGroups"] = alone + job.get("TaskGroups", [])
    for group in job.get("TaskGroups", []):
        group_vault = group.pop("_Vault", None)
        for task in group.get("Tasks", []):
            if "Vault" not in task and (group_vault or vault):
                task["Vault"] = group_vault or vault
            identities = task.get("Identities", [])
            default = next((i for i in identities if i.get("Name", "default") == "default"), None)
            if default is not None:
                task["Identity"] = default
                identities.remove(default)
                if not identities:
                    del task["Identities"]
    return job
