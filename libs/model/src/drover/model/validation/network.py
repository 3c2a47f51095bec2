"""A group's `network` block and its ports, and the deprecated networks of a task's resources
(structs TaskGroup.validateNetworks). A port label is unique in its group, a static port on
its host network, and every value a port can take."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from drover.model.job import TaskGroup
from drover.model.network import (
    DEFAULT_HOST_NETWORK,
    MAX_VALID_PORT,
    NETWORK_MODE_CNI_PREFIX,
    NETWORK_MODE_HOST,
    NETWORK_MODES,
    NetworkResource,
    Port,
)

# A label is part of the task's NOMAD_PORT_<label> and NOMAD_ADDR_<label> variables, so it is
# an environment variable name's letters, digits and underscores (as Nomad's jobspec held them).
PORT_LABEL = re.compile(r"^[A-Za-z0-9_]+$")
_DNS_LABEL_MAX = 63
_DNS_NAME_MAX = 255

GROUP_NETWORK = "the group network"


@dataclass
class _Ports:
    """What the group's ports have taken so far: labels (to their owner) and static ports by
    host network (to the port that holds them)."""

    labels: dict[str, str] = field(default_factory=dict)
    static: dict[tuple[str, int], str] = field(default_factory=dict)


def networks_problems(tg: TaskGroup) -> list[str]:
    """What is wrong with the group's networks and ports, and its tasks' (deprecated) ones."""
    out: list[str] = []
    if len(tg.networks) > 1:
        out.append(f"only one network block is allowed per group, not {len(tg.networks)}")
    taken = _Ports()
    cni_args: set[str] = set()
    for net in tg.networks:
        out += network_problems(net)
        out += _cni_problems(net, cni_args)
        for port in net.ports():
            out += _label_problems(port, GROUP_NETWORK, taken.labels)
        for port in net.reserved_ports:
            out += _static_problems(port, GROUP_NETWORK, taken.static)
    for task in tg.tasks:
        owner = f"task {task.name!r}"
        own_labels = dict(taken.labels)
        for net in task.resources.networks:
            out += network_problems(net)
            for port in net.ports():
                out += _label_problems(port, owner, own_labels)
            for port in net.reserved_ports:
                out += _static_problems(port, owner, taken.static)
    return out


def network_problems(net: NetworkResource) -> list[str]:
    """One network's mode, hostname and port values."""
    out: list[str] = []
    mode = net.mode
    if (
        mode
        and mode not in NETWORK_MODES
        and not (mode.startswith(NETWORK_MODE_CNI_PREFIX) and len(mode) > len(NETWORK_MODE_CNI_PREFIX))
    ):
        out.append(f"network mode {mode!r} is unknown (expected host, bridge, none or cni/<name>)")
    if net.hostname and "${" not in net.hostname and not _dns_name(net.hostname):
        out.append(f"hostname {net.hostname!r} is not a valid DNS name")
    for port in net.reserved_ports:
        out += _port_value_problems(port, mode, dynamic=False)
    for port in net.dynamic_ports:
        out += _port_value_problems(port, mode, dynamic=True)
    return out


def _port_value_problems(port: Port, mode: str, *, dynamic: bool) -> list[str]:
    out: list[str] = []
    name = repr(port.label)
    if dynamic and port.value != 0:
        out.append(
            f"dynamic port {name} has a static value {port.value}; a port with a static value is "
            "a reserved port"
        )
    elif not dynamic and not 1 <= port.value <= MAX_VALID_PORT:
        out.append(f"static port {name} ({port.value}) is outside 1..{MAX_VALID_PORT}")
    if port.to < -1:
        out.append(f"port {name} cannot be mapped to negative value {port.to}")
    elif port.to > MAX_VALID_PORT:
        out.append(f"port {name} cannot be mapped to a port ({port.to}) greater than {MAX_VALID_PORT}")
    if port.ignore_collision and mode not in ("", NETWORK_MODE_HOST):
        out.append(f"port {name} collision may not be ignored on network mode {mode!r}")
    return out


def _label_problems(port: Port, owner: str, labels: dict[str, str]) -> list[str]:
    out: list[str] = []
    if not port.label:
        out.append("a port has no label")
    elif not PORT_LABEL.match(port.label):
        out.append(
            f"port label {port.label!r} is not a valid environment variable name (letters, digits "
            "and underscores only)"
        )
    if port.label in labels:
        out.append(f"port label {port.label!r} already in use by {labels[port.label]}")
    else:
        labels[port.label] = owner
    return out


def _static_problems(port: Port, owner: str, static: dict[tuple[str, int], str]) -> list[str]:
    """A static port taken twice on one host network (`ignore_collision` allows it in the group
    network)."""
    if port.value <= 0:
        return []
    key = (port.host_network or DEFAULT_HOST_NETWORK, port.value)
    holder = static.get(key)
    if holder is None:
        static[key] = f"port {port.label!r} of {owner}"
        return []
    if port.ignore_collision and owner == GROUP_NETWORK:
        return []
    return [f"static port {port.value} of port {port.label!r} already reserved by {holder}"]


def _cni_problems(net: NetworkResource, seen: set[str]) -> list[str]:
    """CNI args are one `;`-separated string of key=value: no key twice, no `;` in either."""
    if net.cni is None:
        return []
    out: list[str] = []
    for key, value in net.cni.args.items():
        if key in seen:
            out.append(f"duplicate CNI arg {key!r}")
        seen.add(key)
        if ";" in key:
            out.append(f"invalid ';' character in CNI arg key {key!r}")
        if ";" in value:
            out.append(f"invalid ';' character in CNI arg value {value!r}")
    return out


def _dns_name(name: str) -> bool:
    """A domain name as a resolver takes it: labels of 1 to 63 characters, 255 in all."""
    labels = name.removesuffix(".").split(".")
    return len(name) <= _DNS_NAME_MAX and all(0 < len(label) <= _DNS_LABEL_MAX for label in labels)
