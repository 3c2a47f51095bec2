"""A service's checks (structs ServiceCheck validateCommon, validateNomad, validateConsul): the
rules every check keeps, then those of its service's provider. Nomad runs only http and tcp
checks itself; Consul's take grpc and script checks too, and pass/fail thresholds. Drover runs a
nomad service's script checks as well, the one kind of check with a warning status (exit 1),
so only they may ignore warnings."""

from __future__ import annotations

from urllib.parse import urlsplit

from drover.model.durations import SECOND, format_duration
from drover.model.services import (
    ADDRESS_MODE_AUTO,
    ADDRESS_MODE_DRIVER,
    ADDRESS_MODES,
    CHECK_GRPC,
    CHECK_HTTP,
    CHECK_INITIAL_STATUSES,
    CHECK_SCRIPT,
    CHECK_TCP,
    CONSUL_CHECK_TYPES,
    NOMAD_CHECK_TYPES,
    ON_UPDATE_IGNORE,
    ON_UPDATE_IGNORE_WARNINGS,
    ON_UPDATE_MODES,
    SERVICE_PROVIDER_NOMAD,
    Service,
    ServiceCheck,
)

# structs minCheckInterval / minCheckTimeout (Consul's own minimum interval).
MIN_CHECK_INTERVAL = SECOND
MIN_CHECK_TIMEOUT = SECOND
# Consul keeps a check's notes short.
MAX_CHECK_NOTES = 255
_HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE")
_THRESHOLD_TYPES = (CHECK_TCP, CHECK_HTTP, CHECK_GRPC)


def check_where(check: ServiceCheck, index: int) -> str:
    return f"check {check.name!r}" if check.name else f"check {index}"


def requires_port(check: ServiceCheck) -> bool:
    """Every check but a script one connects to a port (structs ServiceCheck.RequiresPort)."""
    return check.type.lower() in (CHECK_HTTP, CHECK_TCP, CHECK_GRPC)


def effective_port(check: ServiceCheck, svc: Service) -> str:
    """The port a check connects to: its own, else its service's."""
    return check.port_label or svc.port_label


def check_problems(check: ServiceCheck, provider: str) -> list[str]:
    """What is wrong with a check of a service of `provider` (nomad or consul)."""
    out = _common_problems(
        check, NOMAD_CHECK_TYPES if provider == SERVICE_PROVIDER_NOMAD else CONSUL_CHECK_TYPES
    )
    out += _nomad_problems(check) if provider == SERVICE_PROVIDER_NOMAD else _consul_problems(check)
    return out


def _common_problems(check: ServiceCheck, types: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    kind = check.type.lower()
    if kind not in types:
        out.append(f"invalid check type {kind!r}, must be one of {', '.join(types)}")
    elif kind == CHECK_HTTP and not check.path:
        out.append("an http check must have an http path")
    elif kind == CHECK_HTTP and (urlsplit(check.path).scheme or urlsplit(check.path).netloc):
        out.append(f"an http check must have a relative http path, not {check.path!r}")
    elif kind == CHECK_SCRIPT and not check.command:
        out.append("a script check must have a command")
    out += _timing_problems(check)
    if check.initial_status and check.initial_status not in CHECK_INITIAL_STATUSES:
        out.append(
            f"invalid initial check state {check.initial_status!r}, must be one of "
            f"{', '.join(CHECK_INITIAL_STATUSES)} or empty"
        )
    if check.address_mode == ADDRESS_MODE_AUTO:
        out.append(f"invalid address_mode {check.address_mode!r}: auto is only valid for services")
    elif check.address_mode not in ("", *ADDRESS_MODES):
        out.append(f"invalid address_mode {check.address_mode!r}")
    if check.on_update not in ("", *ON_UPDATE_MODES):
        out.append(f"on_update {check.on_update!r} is unknown (expected one of {', '.join(ON_UPDATE_MODES)})")
    restart = check.check_restart
    if restart is not None:
        if check.on_update == ON_UPDATE_IGNORE:
            out.append(f"on_update {ON_UPDATE_IGNORE!r} is not compatible with check_restart")
        elif check.on_update == ON_UPDATE_IGNORE_WARNINGS and not restart.ignore_warnings:
            out.append(f"on_update {ON_UPDATE_IGNORE_WARNINGS!r} needs check_restart ignore_warnings true")
        if restart.limit < 0:
            out.append(f"check_restart limit must be at least 0, not {restart.limit}")
        if restart.grace < 0:
            out.append(f"check_restart grace must be at least 0, not {format_duration(restart.grace)}")
    return out


def _timing_problems(check: ServiceCheck) -> list[str]:
    out: list[str] = []
    for name, value, least in (("interval", check.interval, MIN_CHECK_INTERVAL),
                               ("timeout", check.timeout, MIN_CHECK_TIMEOUT)):  # fmt: skip
        if value == 0:
            out.append(f"missing required value {name}; it cannot be less than {format_duration(least)}")
        elif value < least:
            out.append(f"{name} {format_duration(value)} cannot be lower than {format_duration(least)}")
    return out


def _nomad_problems(check: ServiceCheck) -> list[str]:
    """What Nomad's own checks do not have: Consul's features."""
    consul_only = {
        "expose": check.expose,
        "success_before_passing": check.success_before_passing != 0,
        "failures_before_critical": check.failures_before_critical != 0,
        "failures_before_warning": check.failures_before_warning != 0,
        "tls_server_name": bool(check.tls_server_name),
    }
    out = [
        f"{name} may only be set for Consul service checks" for name, given in consul_only.items() if given
    ]
    warns = check.type.lower() == CHECK_SCRIPT
    if check.on_update == ON_UPDATE_IGNORE_WARNINGS and not warns:
        out.append(f"on_update may only be {ON_UPDATE_IGNORE_WARNINGS!r} for Consul or script checks")
    if check.check_restart is not None and check.check_restart.ignore_warnings and not warns:
        out.append("ignore_warnings on check_restart is only for Consul or script checks")
    if check.address_mode == ADDRESS_MODE_DRIVER:
        out.append('address_mode "driver" may only be set for Consul service checks')
    if check.type.lower() == CHECK_HTTP and check.method and check.method.upper() not in _HTTP_METHODS:
        out.append(f"method {check.method!r} is not an HTTP method")
    return out


def _consul_problems(check: ServiceCheck) -> list[str]:
    out: list[str] = []
    kind = check.type.lower()
    if check.expose and kind not in (CHECK_HTTP, CHECK_GRPC):
        out.append("expose may only be set on http or grpc checks")
    for name, value in (("success_before_passing", check.success_before_passing),
                        ("failures_before_critical", check.failures_before_critical),
                        ("failures_before_warning", check.failures_before_warning)):  # fmt: skip
        if value < 0:
            out.append(f"{name} must be non-negative")
        elif value > 0 and kind not in _THRESHOLD_TYPES:
            out.append(f"{name} not supported for check of type {kind!r}")
    if len(check.notes) > MAX_CHECK_NOTES:
        out.append(f"notes must not be longer than {MAX_CHECK_NOTES} characters")
    return out
