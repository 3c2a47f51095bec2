"""Task driver configurations Drover knows: what each `config` block may hold, checked at job
register (every problem listed) and again by the client before it starts a task.

- `mock` (Nomad's mock driver, for tests and the simulator): run_for, exit_code,
  start_error, start_error_recoverable, start_block_for, kill_after, plus Nomad's output and
  signal keys (accepted, not acted on).
- `raw_exec`: a real process - command, args, work_dir (oom_score_adj and the cgroup overrides
  are accepted and ignored). Disabled on a client unless its configuration enables it.
- `docker`: a container - every key of Nomad's docker driver, `image` required; its schema
  and the keys kept but not carried out are in drover.model.dockerconfig.
Other drivers' configs are the client's business and are not checked here.
"""

from __future__ import annotations

from typing import Any

from drover.model.dockerconfig import DOCKER_SCHEMA, Check
from drover.model.durations import parse_duration

DRIVER_MOCK = "mock"
DRIVER_RAW_EXEC = "raw_exec"
DRIVER_DOCKER = "docker"


def _duration(v: Any) -> str | None:
    try:
        parse_duration(v)
    except ValueError as e:
        return str(e)
    return None


def _int(v: Any) -> str | None:
    return None if isinstance(v, int) and not isinstance(v, bool) else f"must be an integer, not {v!r}"


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"must be true or false, not {v!r}"


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) else f"must be a string, not {v!r}"


def _str_list(v: Any) -> str | None:
    ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
    return None if ok else f"must be a list of strings, not {v!r}"


def _any(v: Any) -> str | None:
    return None


SCHEMAS: dict[str, dict[str, Check]] = {
    DRIVER_MOCK: {
        "run_for": _duration,
        "exit_code": _int,
        "exit_signal": _int,
        "exit_err_msg": _str,
        "start_error": _str,
        "start_error_recoverable": _bool,
        "start_block_for": _duration,
        "kill_after": _duration,
        "signal_error": _str,
        "stdout_string": _str,
        "stdout_repeat": _int,
        "stdout_repeat_duration": _duration,
    },
    DRIVER_RAW_EXEC: {
        "command": _str,
        "args": _str_list,
        "work_dir": _str,
        "oom_score_adj": _int,
        "cgroup_v1_override": _any,
        "cgroup_v2_override": _any,
        "denied_host_uids": _str,
        "denied_host_gids": _str,
    },
    DRIVER_DOCKER: DOCKER_SCHEMA,
}
# Keys a config must hold, as non-empty strings.
REQUIRED: dict[str, tuple[str, ...]] = {DRIVER_RAW_EXEC: ("command",), DRIVER_DOCKER: ("image",)}


def config_problems(driver: str, config: dict[str, Any]) -> list[str]:
    """Every problem with a task's `config` for `driver` (none for drivers not known here)."""
    schema = SCHEMAS.get(driver)
    if schema is None:
        return []
    out: list[str] = []
    for key in sorted(config):
        check = schema.get(key)
        if check is None:
            out.append(f'{driver} config: unknown key "{key}" (known: {", ".join(sorted(schema))})')
            continue
        problem = check(config[key])
        if problem:
            out.append(f'{driver} config "{key}": {problem}')
    for key in REQUIRED.get(driver, ()):
        if key not in config:
            out.append(f'{driver} config: "{key}" is required')
        elif isinstance(config[key], str) and not config[key].strip():
            out.append(f'{driver} config "{key}": must not be empty')
    return out
