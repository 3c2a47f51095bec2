"""A task's blocks for the systems beside Nomad: vault, workload identities and secrets
(structs Vault.Validate, WorkloadIdentity.Validate, Secret.Validate). Drover keeps them
without carrying them out, but keeps them only as Nomad would accept them."""

from __future__ import annotations

import re

from drover.model.integrations import Secret, Vault, WorkloadIdentity
from drover.model.job import Task
from drover.model.taskfiles import (
    CHANGE_MODE_NOOP,
    CHANGE_MODE_RESTART,
    CHANGE_MODE_SIGNAL,
    VAULT_CHANGE_MODES,
)
from drover.model.validation.places import at

IDENTITY_NAME = re.compile(r"^[a-zA-Z0-9-_]{1,128}$")
DEFAULT_IDENTITY = "default"
SECRET_NAME = re.compile(r"^[a-zA-Z0-9_]{1,128}$")
SECRET_PROVIDER_VAULT = "vault"
_NO_ENV_PROVIDERS = ("nomad", SECRET_PROVIDER_VAULT)


def integrations_at(where: str, task: Task) -> list[str]:
    """The task's vault block, identities and secrets, each placed at its block."""
    out: list[str] = []
    if task.vault is not None:
        out += at(f"{where}, vault", vault_problems(task.vault))
    if task.identity is not None:
        name = task.identity.name or DEFAULT_IDENTITY
        out += at(f"{where}, identity {name!r}", identity_problems(task.identity, default=True))
    for wid in task.identities:
        default = wid.name in ("", DEFAULT_IDENTITY)
        if default and task.identity is not None:
            out.append(f"{where}: duplicate default identities found")
        out += at(f"{where}, identity {wid.name!r}", identity_problems(wid, default=default))
    seen: set[str] = set()
    for secret in task.secrets:
        if secret.name in seen:
            out.append(f"{where}: duplicate secret {secret.name!r} found")
        seen.add(secret.name)
        if secret.provider == SECRET_PROVIDER_VAULT and task.vault is None:
            out.append(
                f'{where}: secret {secret.name!r} has provider "vault" but the task has no vault block'
            )
        out += at(f"{where}, secret {secret.name!r}", secret_problems(secret))
    return out


def vault_problems(v: Vault) -> list[str]:
    if v.change_mode not in VAULT_CHANGE_MODES:
        return [f"unknown change mode {v.change_mode!r} (expected one of {', '.join(VAULT_CHANGE_MODES)})"]
    if v.change_mode == CHANGE_MODE_SIGNAL and not v.change_signal:
        return [f"a signal must be specified with change mode {CHANGE_MODE_SIGNAL!r}"]
    return []


def identity_problems(wid: WorkloadIdentity, *, default: bool) -> list[str]:
    out: list[str] = []
    if not default and not IDENTITY_NAME.match(wid.name):
        out.append(f"invalid name {wid.name!r}: letters, digits, dashes and underscores, 1 to 128")
    out += [f"audience {i} is empty" for i, aud in enumerate(wid.audience, 1) if not aud]
    if wid.change_mode in ("", CHANGE_MODE_NOOP, CHANGE_MODE_RESTART):
        if wid.change_signal:
            out.append(f"change_signal is only for change_mode {CHANGE_MODE_SIGNAL!r}")
    elif wid.change_mode == CHANGE_MODE_SIGNAL:
        if not wid.change_signal:
            out.append(f"change_signal must be specified when using change_mode {CHANGE_MODE_SIGNAL!r}")
    else:
        out.append(f"invalid change_mode {wid.change_mode!r}")
    if wid.ttl < 0:
        out.append("ttl must be >= 0")
    elif wid.ttl > 0 and default:
        out.append("ttl for the default identity is not supported")
    if wid.filepath and not wid.file:
        out.append("file must be true in order to specify filepath")
    return out


def secret_problems(s: Secret) -> list[str]:
    out: list[str] = []
    if not SECRET_NAME.match(s.name):
        out.append("secret name must be letters, digits and underscores, 1 to 128")
    if not s.provider:
        out.append("secret provider cannot be empty")
    if not s.path:
        out.append("secret path cannot be empty")
    if s.provider in _NO_ENV_PROVIDERS and s.env:
        out.append(f"{s.provider} provider cannot use the env block")
    elif s.provider not in _NO_ENV_PROVIDERS and s.config:
        out.append(f"custom plugin provider {s.provider!r} cannot use the config block")
    return out
