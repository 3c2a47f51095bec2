"""What lands in a task's directories before it starts: `artifact`s fetched and `template`s
rendered (Nomad's api TaskArtifact, Template)."""

from __future__ import annotations

from pydantic import Field

from drover.model.base import NomadModel

ARTIFACT_MODES = ("any", "file", "dir")
CHANGE_MODE_NOOP = "noop"
CHANGE_MODE_RESTART = "restart"
CHANGE_MODE_SIGNAL = "signal"
CHANGE_MODE_SCRIPT = "script"
TEMPLATE_CHANGE_MODES = (CHANGE_MODE_NOOP, CHANGE_MODE_RESTART, CHANGE_MODE_SIGNAL, CHANGE_MODE_SCRIPT)
# What a vault token's or a workload identity's renewal does to the task.
VAULT_CHANGE_MODES = (CHANGE_MODE_NOOP, CHANGE_MODE_RESTART, CHANGE_MODE_SIGNAL)


class TaskArtifact(NomadModel):
    getter_source: str = ""
    getter_options: dict[str, str] = Field(default_factory=dict)
    getter_headers: dict[str, str] = Field(default_factory=dict)
    getter_mode: str = ""
    getter_insecure: bool = False
    relative_dest: str = ""
    chown: bool = False


class WaitConfig(NomadModel):
    min: int = 0
    max: int = 0


class ChangeScript(NomadModel):
    command: str = ""
    args: list[str] = Field(default_factory=list)
    timeout: int = 0
    fail_on_error: bool = False
    run_on_first_render: bool = False


class Template(NomadModel):
    source_path: str = ""
    dest_path: str = ""
    embedded_tmpl: str = ""
    change_mode: str = ""
    change_script: ChangeScript | None = None
    change_signal: str = ""
    once: bool = False
    splay: int = 0
    perms: str = ""
    uid: int | None = None
    gid: int | None = None
    left_delim: str = ""
    right_delim: str = ""
    envvars: bool = False
    vault_grace: int = 0
    wait: WaitConfig | None = None
    err_missing_key: bool = False
