"""Ports on a node, as Nomad's NetworkIndex keeps them: the addresses of each host network,
the ports taken (by live allocs, by the node's reserved ports), and the assignment of a group's
static and dynamic ports without collision. Unlike Nomad's, a port is taken on the whole node
whatever address it was given on: one port is never given twice on a node.

A static port that is taken fails as Nomad words it ("reserved port collision http=9900");
dynamic ports are drawn at random from the node's range (seeded by the caller, so an eval
decides the same way twice), then, if sampling fails, by a scan of the range."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from drover.model.alloc import Allocation
from drover.model.base import unvalidated
from drover.model.network import (
    DEFAULT_HOST_NETWORK,
    MAX_VALID_PORT,
    NETWORK_MODE_HOST,
    AllocatedPortMapping,
    NetworkResource,
    Port,
    parse_port_ranges,
)
from drover.model.node import Node

_MAPPING_SET = set(AllocatedPortMapping.model_fields)
_NONE: frozenset[int] = frozenset()
# Random draws for one dynamic port before the range is scanned (Nomad's maxRandPortAttempts).
_RANDOM_ATTEMPTS = 20


def group_network(networks: list[NetworkResource]) -> NetworkResource | None:
    """The network a group asks for: its first (Nomad allows one per group)."""
    return networks[0] if networks else None


def node_addresses(node: Node) -> dict[str, list[str]]:
    """Each host network's addresses on the node: from its fingerprinted interfaces (by alias),
    else, for a node that reports only `NodeResources.Networks`, their IPs as "default"."""
    out: dict[str, list[str]] = {}
    for net in node.node_resources.node_networks:
        for addr in net.addresses:
            if addr.alias and addr.address:
                out.setdefault(addr.alias, []).append(addr.address)
    if not out:
        ips = [n.ip for n in node.node_resources.networks if n.ip]
        if ips:
            out[DEFAULT_HOST_NETWORK] = ips
    return out


def node_network_modes(node: Node) -> set[str]:
    """The network modes the node offers (an unset mode is host)."""
    return {n.mode or NETWORK_MODE_HOST for n in node.node_resources.networks}


FILTER_MISSING_NETWORK = "missing network"  # Nomad's NetworkChecker


def network_feasibility(ask: NetworkResource, node: Node) -> str | None:
    """Why the node cannot give the group its network (Nomad's NetworkChecker): the mode is
    not offered, or a port's host network has no address here; None when it can."""
    if (ask.mode or NETWORK_MODE_HOST) not in node_network_modes(node):
        return FILTER_MISSING_NETWORK
    addresses = node_addresses(node)
    for port in ask.ports():
        network = port.host_network or DEFAULT_HOST_NETWORK
        if network not in addresses:
            return f'missing host network "{network}" for port "{port.label}"'
    return None


def reserved_ports(node: Node) -> frozenset[int]:
    """The node's reserved host ports (client `reserved { reserved_ports }`); a malformed
    spec reserves nothing (the agent validates it before registering)."""
    spec = node.reserved_resources.networks.reserved_host_ports
    try:
        return frozenset(parse_port_ranges(spec)) if spec else frozenset()
    except ValueError:
        return frozenset()


def _address_reserved(node: Node) -> dict[str, frozenset[int]]:
    out: dict[str, frozenset[int]] = {}
    for net in node.node_resources.node_networks:
        for addr in net.addresses:
            if addr.reserved_ports:
                try:
                    out[addr.address] = frozenset(parse_port_ranges(addr.reserved_ports))
                except ValueError:
                    continue
    return out


@dataclass(frozen=True)
class NodePorts:
    """What a node offers for ports, as it registered it: its host networks' addresses, the
    dynamic range and its reserved ports. The same for every eval until the node changes."""

    addresses: dict[str, list[str]]
    min_port: int
    max_port: int
    reserved: frozenset[int]
    address_reserved: dict[str, frozenset[int]]

    @classmethod
    def of(cls, node: Node) -> NodePorts:
        r = node.node_resources
        return cls(
            node_addresses(node),
            r.min_dynamic_port,
            r.max_dynamic_port,
            reserved_ports(node),
            _address_reserved(node),
        )


@dataclass(frozen=True)
class PortAsk:
    """A group's network ask as the index reads it: static ports with their host network,
    and how many dynamic ports each host network must give."""

    network: NetworkResource
    static: tuple[tuple[Port, str], ...]
    dynamic: dict[str, int]
    static_values: dict[str, frozenset[int]]  # host network -> its static ports

    @classmethod
    def of(cls, network: NetworkResource) -> PortAsk:
        dynamic: Counter[str] = Counter(p.host_network or DEFAULT_HOST_NETWORK for p in network.dynamic_ports)
        static = tuple((p, p.host_network or DEFAULT_HOST_NETWORK) for p in network.reserved_ports)
        values: dict[str, set[int]] = {}
        for p, n in static:
            values.setdefault(n, set()).add(p.value)
        return cls(network, static, dict(dynamic), {n: frozenset(v) for n, v in values.items()})


class NetworkIndex:
    """The ports of one node: what is taken on each address, and what a group may be given."""

    def __init__(self, node: Node, ports: NodePorts | None = None) -> None:
        ports = ports or NodePorts.of(node)
        self.node = node
        self.addresses = ports.addresses
        self.min_port, self.max_port = ports.min_port, ports.max_port
        self.reserved = ports.reserved
        self.address_reserved = ports.address_reserved
        # Port -> how many allocs (of the state and the plan) hold it, on any address: a host
        # network often has an IPv4 and an IPv6 address, and one port is never given twice on
        # a node (Nomad's index keeps ports per address, and would).
        self.used: dict[int, int] = {}

    def add_allocs(self, allocs: Iterable[Allocation], sign: int = 1) -> None:
        for a in allocs:
            self.add(a, sign)

    def add(self, alloc: Allocation, sign: int = 1) -> None:
        """Take (sign 1) or give back (-1) the host ports the alloc was given."""
        ar = alloc.allocated_resources
        if ar is not None:
            self.offer(ar.shared.ports, sign)

    def taken(self, address: str, port: int) -> bool:
        return port in self.used or port in self.reserved or port in self.address_reserved.get(address, ())

    def collision(self, ask: PortAsk) -> str | None:
        """Why the group's ports do not fit here (Nomad's words), None if they do. Cheaper
        than `assign`: static ports are looked up, dynamic ones only counted."""
        for port, network in ask.static:
            addrs = self.addresses.get(network)
            if not addrs:
                return f"no addresses available for {network} network"
            if not port.ignore_collision and all(self.taken(a, port.value) for a in addrs):
                return f"reserved port collision {port.label}={port.value}"
        for network, wanted in ask.dynamic.items():
            addrs = self.addresses.get(network)
            if not addrs:
                return f"no addresses available for {network} network"
            statics = ask.static_values.get(network, _NONE)
            for a in addrs:
                if self._free_count(a, statics) >= wanted:
                    break
            else:
                return "dynamic port selection failed"
        return None

    def _free_count(self, address: str, also_taken: frozenset[int]) -> int:
        lo, hi = self.min_port, self.max_port
        size = hi - lo + 1
        used = self.used
        reserved = self.address_reserved.get(address, frozenset())
        # Nearly always the range is far from full: an upper bound on what is taken settles it.
        bound = len(used) + len(self.reserved) + len(reserved) + len(also_taken)
        if bound < size // 2:
            return size - bound
        taken = set(self.reserved) | set(reserved) | also_taken
        taken.update(used)
        return size - sum(1 for p in taken if lo <= p <= hi)

    def assign(self, ask: PortAsk, rng: random.Random) -> tuple[list[AllocatedPortMapping], str] | str:
        """The ports the group is given here (static as asked, dynamic drawn from the range)
        and the address of its first host network; or why it cannot be (Nomad's words)."""
        offer: list[AllocatedPortMapping] = []
        in_offer: set[int] = set()  # the ports of this offer, on any address
        for port, _ in ask.static:
            got = self._assign_static(port, in_offer)
            if isinstance(got, str):
                return got
            offer.append(got)
        for port in ask.network.dynamic_ports:
            got = self._assign_dynamic(port, in_offer, rng)
            if isinstance(got, str):
                return got
            offer.append(got)
        default = self.addresses.get(DEFAULT_HOST_NETWORK, [""])
        return offer, (offer[0].host_ip if offer else default[0])

    def _assign_static(self, port: Port, in_offer: set[int]) -> AllocatedPortMapping | str:
        network = port.host_network or DEFAULT_HOST_NETWORK
        if not 0 < port.value <= MAX_VALID_PORT:
            return f"invalid port {port.value} (out of range)"
        error = f"no addresses available for {network} network"
        for addr in self.addresses.get(network, []):
            if not port.ignore_collision and (self.taken(addr, port.value) or port.value in in_offer):
                error = f"reserved port collision {port.label}={port.value}"
                continue
            in_offer.add(port.value)
            return AllocatedPortMapping(
                label=port.label,
                value=port.value,
                to=port.to,
                host_ip=addr,
                ignore_collision=port.ignore_collision,
            )
        return error

    def _assign_dynamic(
        self, port: Port, in_offer: set[int], rng: random.Random
    ) -> AllocatedPortMapping | str:
        network = port.host_network or DEFAULT_HOST_NETWORK
        addrs = self.addresses.get(network)
        if not addrs:
            return f"no addresses available for {network} network"
        for addr in addrs:
            value = self._pick(addr, in_offer, rng)
            if value:
                in_offer.add(value)
                to = value if port.to == -1 else port.to
                return unvalidated(
                    AllocatedPortMapping,
                    {
                        "label": port.label,
                        "value": value,
                        "to": to,
                        "host_ip": addr,
                        "ignore_collision": False,
                    },
                    _MAPPING_SET,
                )
        return "dynamic port selection failed"

    def _pick(self, addr: str, mine: set[int], rng: random.Random) -> int:
        """A free port of the dynamic range on `addr`: random draws first, then a scan from a
        random point (0 when none is free)."""
        lo, hi = self.min_port, self.max_port
        if hi < lo:
            return 0
        size, draw = hi - lo + 1, rng.random
        # `taken`, inlined: this runs for every dynamic port of every placement.
        reserved, own = self.reserved, self.address_reserved.get(addr, _NONE)
        used = self.used
        for _ in range(_RANDOM_ATTEMPTS):
            p = lo + int(draw() * size)
            if p not in mine and p not in used and p not in reserved and p not in own:
                return p
        start = lo + int(draw() * size)
        for first, last in ((start, hi), (lo, start - 1)):
            for p in range(first, last + 1):
                if p not in mine and p not in used and p not in reserved and p not in own:
                    return p
        return 0

    def offer(self, alloc_ports: list[AllocatedPortMapping], sign: int = 1) -> None:
        """Take (or give back) ports of an offer not yet in an alloc (a port given with
        ignore_collision takes nothing)."""
        for p in alloc_ports:
            if p.ignore_collision:
                continue
            used = self.used
            n = used.get(p.value, 0) + sign
            if n > 0:
                used[p.value] = n
            else:
                used.pop(p.value, None)
