"""Nomad Variables: a namespace's secrets by path, their Items encrypted before they reach the
log (Nomad's VariableEncrypted: the metadata in the clear, the items as ciphertext under a key
of the keyring, named by its ID), and the lock a variable may hold (Nomad 1.7's variable
locks). The rules of paths, items and locks are Nomad's (nomad/structs/variables.go)."""

from __future__ import annotations

import re
from typing import Any

from drover.model.base import NomadModel
from drover.model.durations import format_duration, parse_duration

SECOND = 1_000_000_000
# The items' total size, keys and values together (Nomad's maxVariableSize).
MAX_VARIABLE_SIZE = 65536
MIN_LOCK_TTL = 10 * SECOND
MAX_LOCK_TTL = 24 * 3600 * SECOND
DEFAULT_LOCK_TTL = 15 * SECOND
DEFAULT_LOCK_DELAY = 15 * SECOND
# URL-safe characters that do not clash with `@` and `.` in templates, at most 128 of them.
_VALID_PATH = re.compile(r"^[a-zA-Z0-9\-_~/]{1,128}$")
ALL_NAMESPACES = "*"


class VariableLock(NomadModel):
    """A lock held on a variable: its holder's ID, how long it lives unless renewed, and how
    long it stays unavailable once it lapsed. `expires_at` (Drover's, never shown) is when it
    lapses: the lock is decided lazily against the time, so a lapsed lock is free to anyone
    after its LockDelay, without a timer releasing it."""

    id: str = ""
    ttl: int = 0
    lock_delay: int = 0
    expires_at: int = 0

    def live(self, now: int) -> bool:
        return now < self.expires_at

    def delayed(self, now: int) -> bool:
        """Lapsed, but within its LockDelay after: no one may take it yet."""
        return self.expires_at <= now < self.expires_at + self.lock_delay

    def to_api(self) -> dict[str, Any]:
        return {
            "ID": self.id,
            "TTL": format_duration(self.ttl),
            "LockDelay": format_duration(self.lock_delay),
        }


class EncryptedItems(NomadModel):
    """A variable's Items as ciphertext (Nomad's VariableData): base64 of the nonce and the
    AES-GCM ciphertext, and the ID of the key that sealed it."""

    key_id: str
    data: str


class VariableEncrypted(NomadModel):
    """A variable as the log and the projection hold it: metadata in the clear, items sealed."""

    namespace: str = "default"
    path: str = ""
    create_index: int = 0
    create_time: int = 0
    modify_index: int = 0
    modify_time: int = 0
    lock: VariableLock | None = None
    sealed: EncryptedItems

    def held_lock(self, now: int) -> VariableLock | None:
        """Its lock, while it has not lapsed."""
        return self.lock if self.lock is not None and self.lock.live(now) else None

    def metadata(self, now: int) -> dict[str, Any]:
        """Nomad's VariableMetadata (a lapsed lock is not shown: Nomad's timer would have
        released it)."""
        out: dict[str, Any] = {
            "Namespace": self.namespace,
            "Path": self.path,
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
            "CreateTime": self.create_time,
            "ModifyTime": self.modify_time,
        }
        lock = self.held_lock(now)
        if lock is not None:
            out["Lock"] = lock.to_api()
        return out

    def decrypted(self, items: dict[str, str], now: int) -> dict[str, Any]:
        """Nomad's Variable: its metadata and its Items in the clear."""
        return {**self.metadata(now), "Items": items}


class LockRequest(NomadModel):
    """A lock as a request gives it (Nomad's api VariableLock): durations as Go's strings or
    nanoseconds."""

    id: str = ""
    ttl: str | int | float = ""
    lock_delay: str | int | float = ""


class VariableRequest(NomadModel):
    """A variable as a request body gives it (Nomad's api Variable)."""

    namespace: str = ""
    path: str = ""
    items: dict[str, str] | None = None
    lock: LockRequest | None = None


def items_size(items: dict[str, str]) -> int:
    return sum(len(k.encode()) + len(v.encode()) for k, v in items.items())


def path_problems(path: str) -> list[str]:
    """What is wrong with a variable's path, as Nomad's ValidatePath says it."""
    if not path:
        return ["variable requires path"]
    if not _VALID_PATH.match(path):
        return [f'invalid path "{path}"']
    parts = path.split("/")
    if parts[0] != "nomad":
        return []
    if len(parts) == 1:
        return [
            '"nomad" is a reserved top-level directory path, but you may write variables to '
            '"nomad/jobs", "nomad/job-templates", "nomad/sentinel", or below'
        ]
    if parts[1] in ("jobs", "sentinel") or (parts[1] == "job-templates" and len(parts) == 3):
        return []
    if parts[1] == "job-templates":
        return [
            '"nomad/job-templates" is a reserved directory path, but you may write variables at '
            'the level below it, for example, "nomad/job-templates/template-name"'
        ]
    return [
        'only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under '
        'the top-level "nomad" directory'
    ]


def _duration(value: str | int | float, name: str, problems: list[str]) -> int:
    if value == "":
        return 0
    try:
        return parse_duration(value)
    except (ValueError, TypeError):
        problems.append(f"Lock.{name}: invalid duration {value!r}")
        return 0


def namespace_problems(namespace: str) -> list[str]:
    return ['can not target wildcard ("*")namespace'] if namespace == ALL_NAMESPACES else []


def set_problems(
    namespace: str, path: str, items: dict[str, str] | None, lock: LockRequest | None
) -> list[str]:
    """Every problem of a write (Nomad's Validate for a set or a check-and-set): items given
    and within size, a valid path, and no lock settings (a lock is taken with lock-acquire)."""
    problems = namespace_problems(namespace)
    if not items:
        problems.append("variable missing required Items object")
    elif items_size(items) > MAX_VARIABLE_SIZE:
        problems.append("variables are limited to 64KiB in total size")
    problems += path_problems(path)
    if lock is not None and (lock.ttl not in ("", 0) or lock.lock_delay not in ("", 0)):
        problems.append("variable should not contain lock definition")
    return problems


def lock_settings(
    namespace: str, path: str, items: dict[str, str] | None, lock: LockRequest | None
) -> tuple[int, int, list[str]]:
    """A lock-acquire's TTL and LockDelay (Nomad's defaults for those not given), and every
    problem of it (Nomad's ValidateForLock)."""
    problems = namespace_problems(namespace)
    if items and items_size(items) > MAX_VARIABLE_SIZE:
        problems.append("variables are limited to 64KiB in total size")
    problems += path_problems(path)
    req = lock or LockRequest()
    ttl = _duration(req.ttl, "TTL", problems) or DEFAULT_LOCK_TTL
    delay = _duration(req.lock_delay, "LockDelay", problems) or DEFAULT_LOCK_DELAY
    if ttl < 0 or delay < 0:
        problems.append("Lock TTL and LockDelay must not be negative")
    elif not MIN_LOCK_TTL <= ttl <= MAX_LOCK_TTL:
        problems.append("TTL must be between 10 seconds and 24 hours")
    return ttl, delay, problems
