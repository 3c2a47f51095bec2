"""Nomad's own service checks (http and tcp, of `provider = "nomad"` services, and script
checks run in their task as Nomad's script check hook runs them for Consul), as the client
runs them: each check's ID and mode, where it connects or which task runs it, what counts as
a success, the status it shows after `success_before_passing` / `failures_before_critical`
(a script's by its exit code: 0 passing, 1 warning, else critical), its result in Nomad's form
(CheckQueryResult), and when `check_restart` restarts its task."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.model.alloc import Allocation
from drover.model.allocated import AllocatedResources
from drover.model.base import NomadModel
from drover.model.job import TaskGroup
from drover.model.serviceregistration import nomad_services, service_address
from drover.model.services import (
    CHECK_SCRIPT,
    NOMAD_CHECK_TYPES,
    ON_UPDATE_IGNORE,
    ON_UPDATE_IGNORE_WARNINGS,
    Service,
    ServiceCheck,
)

MODE_HEALTHINESS = "healthiness"
MODE_READINESS = "readiness"
STATUS_SUCCESS = "success"
STATUS_FAILURE = "failure"
STATUS_PENDING = "pending"
# A script check that exited 1 (Consul's warning; Nomad's own checks have none).
STATUS_WARNING = "warning"
OUTPUT_WAITING = "nomad: waiting to run"
OUTPUT_TCP_OK = "nomad: tcp ok"
OUTPUT_HTTP_OK = "nomad: http ok"
# Nomad keeps this much of a failing answer's body as the check's output.
OUTPUT_LIMIT = 3 * 1024
# And this much of a script's output, its last bytes (the executor's CheckBufSize ring buffer).
SCRIPT_OUTPUT_LIMIT = 4 * 1024
# What a script that outlived its timeout reports (Go's context.DeadlineExceeded).
OUTPUT_DEADLINE = "context deadline exceeded"


class CheckQueryResult(NomadModel):
    """A check's latest result (Nomad's CheckQueryResult; Timestamp in Unix seconds)."""

    id: str
    mode: str = MODE_HEALTHINESS
    status: str = STATUS_PENDING
    status_code: int = 0
    output: str = ""
    timestamp: int = 0
    group: str = ""
    task: str = ""
    service: str = ""
    check: str = ""

    def to_api(self) -> dict[str, object]:
        out = super().to_api()
        if not self.status_code:
            out.pop("StatusCode", None)  # omitted when empty, as Nomad's
        if not self.task:
            out.pop("Task", None)
        return out


def check_id(alloc_id: str, group: str, check: ServiceCheck) -> str:
    """Nomad's NomadCheckID: sha256 of the alloc, group and the check's defining fields
    (durations as 8 little-endian bytes), in hex."""
    h = hashlib.sha256()
    for s in (alloc_id, group, check.task_name, check.name, check.type, check.port_label, check.on_update,
              check.address_mode):  # fmt: skip
        h.update(s.encode())
    for ns in (check.interval, check.timeout):
        h.update(ns.to_bytes(8, "little", signed=True))
    for s in (check.protocol, check.path, check.method, "true" if check.tls_skip_verify else "false"):
        h.update(s.encode())
    return h.hexdigest()


def check_mode(check: ServiceCheck) -> str:
    """A check with on_update "ignore" only tells readiness; the others health too."""
    return MODE_READINESS if check.on_update == ON_UPDATE_IGNORE else MODE_HEALTHINESS


@dataclass
class CheckSpec:
    """One check of one service of an alloc, with what it needs to run."""

    id: str
    check: ServiceCheck
    service: Service
    task: str  # the task whose service it is ("" for a group service)

    @property
    def mode(self) -> str:
        return check_mode(self.check)

    def target(self, resources: AllocatedResources | None) -> tuple[str, int]:
        """The host and port it connects to: the check's port label, else its service's,
        resolved as the service's address is. Raises ValueError as service_address does."""
        label = self.check.port_label or self.service.port_label
        mode = self.check.address_mode or self.service.address_mode
        spec = self.service.model_copy(update={"port_label": label, "address_mode": mode})
        return service_address(spec, resources)

    @property
    def script(self) -> bool:
        return self.check.type.lower() == CHECK_SCRIPT

    @property
    def check_task(self) -> str:
        """The task a script check runs in and check_restart restarts: the check's own `task`,
        else its service's."""
        return self.check.task_name or self.task or self.service.task_name

    def passing(self, status: str) -> bool:
        """Whether `status` counts as passing for deployment health: success, or a warning of a
        check whose on_update ignores warnings."""
        return status == STATUS_SUCCESS or (
            status == STATUS_WARNING and self.check.on_update == ON_UPDATE_IGNORE_WARNINGS
        )

    def url(self, host: str, port: int) -> str:
        """An http check's URL: its protocol (http by default), the address and its path."""
        hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        path = self.check.path if self.check.path.startswith("/") else "/" + self.check.path
        return f"{self.check.protocol or 'http'}://{hostport}{path}"

    def stub(self, alloc: Allocation, now_s: int) -> CheckQueryResult:
        """Its result before its first run."""
        return CheckQueryResult(
            id=self.id, mode=self.mode, status=STATUS_PENDING, output=OUTPUT_WAITING, timestamp=now_s,
            group=alloc.name, task=self.task, service=self.service.name, check=self.check.name,
        )  # fmt: skip


def alloc_checks(alloc: Allocation, tg: TaskGroup) -> list[CheckSpec]:
    """Every http, tcp and script check of the alloc's nomad services, its group's and its
    tasks'."""
    out: list[CheckSpec] = []
    owners = [("", tg.services), *((t.name, t.services) for t in tg.tasks)]
    for task, services in owners:
        for svc in nomad_services(services):
            for check in svc.checks:
                if check.type in NOMAD_CHECK_TYPES:
                    out.append(CheckSpec(check_id(alloc.id, alloc.task_group, check), check, svc, task))
    return out


def http_status_ok(code: int) -> bool:
    """Nomad's: any answer below 400 is a success."""
    return code < 400


def script_command(check: ServiceCheck, replace: Callable[[str], str]) -> list[str]:
    """A script check's command and arguments, each with the task's environment interpolated
    (`replace`), the command not split: it names the program, as in Nomad."""
    return [replace(check.command), *(replace(a) for a in check.args)]


def script_result(exit_code: int, output: bytes, error: str = "") -> tuple[str, str]:
    """A script check's status and output (Nomad's script check callback): exit 0 passing,
    1 warning, anything else critical; a script that did not run or outlived its timeout
    (`error`) critical, its error as the output. The output keeps its last bytes."""
    if error:
        return STATUS_FAILURE, error
    status = {0: STATUS_SUCCESS, 1: STATUS_WARNING}.get(exit_code, STATUS_FAILURE)
    return status, output[-SCRIPT_OUTPUT_LIMIT:].decode(errors="replace")


@dataclass
class Threshold:
    """The status a check shows: a success counts once `success_before_passing` have come in
    a row, a failure once `failures_before_critical` have; until then the status stays."""

    success_before_passing: int = 0
    failures_before_critical: int = 0
    status: str = STATUS_PENDING
    successes: int = 0
    failures: int = 0

    def observe(self, ok: bool) -> str:
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if self.status != STATUS_SUCCESS and self.successes >= max(self.success_before_passing, 1):
                self.status = STATUS_SUCCESS
        else:
            self.successes, self.failures = 0, self.failures + 1
            if self.status != STATUS_FAILURE and self.failures >= max(self.failures_before_critical, 1):
                self.status = STATUS_FAILURE
        return self.status


@dataclass
class RestartWatch:
    """check_restart: the task is restarted once the check has failed `limit` times in a row,
    counted only after `grace` has passed since the task started (Nomad's checkWatcher). A
    limit of 0 never restarts. A warning is a failure unless `ignore_warnings`."""

    limit: int
    grace: int  # ns
    ignore_warnings: bool = False
    failures: int = field(default=0)

    def observe(self, status: str, now: int, started_at: int) -> bool:
        """Whether to restart the task now, given the check's status after a run and when the
        task last (re)started (ns)."""
        if self.limit <= 0 or now < started_at + self.grace:
            self.failures = 0
            return False
        if status != STATUS_FAILURE and (status != STATUS_WARNING or self.ignore_warnings):
            self.failures = 0
            return False
        self.failures += 1
        if self.failures >= self.limit:
            self.failures = 0
            return True
        return False
