"""Ports on a node, as Nomad's NetworkIndex keeps them: the addresses of each host network,
the ports taken on each address (by live allocs, by the node's reserved ports), and the
assignment of a group's static and dynamic ports without collision.

A static port that is taken fails as Nomad words it ("reserved port collision http=9900");
dynamic ports are drawn at random from the node's range (seeded by the caller, so an eval
decides the same way twice), then, if sampling fails, by a scan of the range."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from drover.model.alloc import Allocation
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


class NetworkIndex:
    """The ports of one node: what is taken on each address, and what a group may be given."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.addresses = node_addresses(node)
        self.min_port = node.node_resources.min_dynamic_port
        self.max_port = node.node_resources.max_dynamic_port
        self.reserved = reserved_ports(node)
        self.address_reserved = _address_reserved(node)
        self.used: dict[str, Counter[int]] = {}

    def add_allocs(self, allocs: Iterable[Allocation], sign: int = 1) -> None:
        for a in allocs:
            self.add(a, sign)

    def add(self, alloc: Allocation, sign: int = 1) -> None:
        """Take (sign 1) or give back (-1) the host ports the alloc was given."""
        ar = alloc.allocated_resources
        if ar is not None:
            self.offer(ar.shared.ports, sign)

    def taken(self, address: str, port: int) -> bool:
        used = self.used.get(address)
        return (
            port in self.reserved
            or port in self.address_reserved.get(address, ())
            or (used is not None and used[port] > 0)
        )

    def collision(self, ask: NetworkResource) -> str | None:
        """Why the group's ports do not fit here (Nomad's words), None if they do. Cheaper
        than `assign`: static ports are looked up, dynamic ones only counted."""
        dynamic_wanted: Counter[str] = Counter()
        for port in ask.reserved_ports:
            addrs = self.addresses.get(port.host_network or DEFAULT_HOST_NETWORK, [])
            if not addrs:
                return f"no addresses available for {port.host_network} network"
            if not port.ignore_collision and all(self.taken(a, port.value) for a in addrs):
                return f"reserved port collision {port.label}={port.value}"
        for port in ask.dynamic_ports:
            dynamic_wanted[port.host_network or DEFAULT_HOST_NETWORK] += 1
        for network, wanted in dynamic_wanted.items():
            addrs = self.addresses.get(network, [])
            if not addrs:
                return f"no addresses available for {network} network"
            statics = {
                p.value for p in ask.reserved_ports if (p.host_network or DEFAULT_HOST_NETWORK) == network
            }
            if not any(self._free_count(a, statics) >= wanted for a in addrs):
                return "dynamic port selection failed"
        return None

    def _free_count(self, address: str, also_taken: set[int]) -> int:
        lo, hi = self.min_port, self.max_port
        taken = set(self.reserved) | set(self.address_reserved.get(address, ())) | also_taken
        taken.update(p for p, n in self.used.get(address, {}).items() if n > 0)
        return (hi - lo + 1) - sum(1 for p in taken if lo <= p <= hi)

    def assign(
        self, ask: NetworkResource, rng: random.Random
    ) -> tuple[list[AllocatedPortMapping], str] | str:
        """The ports the group is given here (static as asked, dynamic drawn from the range)
        and the address of its first host network; or why it cannot be (Nomad's words)."""
        offer: list[AllocatedPortMapping] = []
        in_offer: dict[str, set[int]] = {}
        for port in ask.reserved_ports:
            got = self._assign_static(port, in_offer)
            if isinstance(got, str):
                return got
            offer.append(got)
        for port in ask.dynamic_ports:
            got = self._assign_dynamic(port, in_offer, rng)
            if isinstance(got, str):
                return got
            offer.append(got)
        default = self.addresses.get(DEFAULT_HOST_NETWORK, [""])
        return offer, (offer[0].host_ip if offer else default[0])

    def _assign_static(self, port: Port, in_offer: dict[str, set[int]]) -> AllocatedPortMapping | str:
        network = port.host_network or DEFAULT_HOST_NETWORK
        if not 0 < port.value <= MAX_VALID_PORT:
            return f"invalid port {port.value} (out of range)"
        error = f"no addresses available for {network} network"
        for addr in self.addresses.get(network, []):
            if not port.ignore_collision and (
                self.taken(addr, port.value) or port.value in in_offer.get(addr, ())
            ):
                error = f"reserved port collision {port.label}={port.value}"
                continue
            in_offer.setdefault(addr, set()).add(port.value)
            return AllocatedPortMapping(
                label=port.label,
                value=port.value,
                to=port.to,
                host_ip=addr,
                ignore_collision=port.ignore_collision,
            )
        return error

    def _assign_dynamic(
        self, port: Port, in_offer: dict[str, set[int]], rng: random.Random
    ) -> AllocatedPortMapping | str:
        network = port.host_network or DEFAULT_HOST_NETWORK
        addrs = self.addresses.get(network, [])
        if not addrs:
            return f"no addresses available for {network} network"
        for addr in addrs:
            mine = in_offer.setdefault(addr, set())
            value = self._pick(addr, mine, rng)
            if value:
                mine.add(value)
                to = value if port.to == -1 else port.to
                return AllocatedPortMapping(label=port.label, value=value, to=to, host_ip=addr)
        return "dynamic port selection failed"

    def _pick(self, addr: str, mine: set[int], rng: random.Random) -> int:
        """A free port of the dynamic range on `addr`: random draws first, then a scan from a
        random point (0 when none is free)."""
        lo, hi = self.min_port, self.max_port
        if hi < lo:
            return 0
        for _ in range(_RANDOM_ATTEMPTS):
            p = rng.randint(lo, hi)
            if p not in mine and not self.taken(addr, p):
                return p
        start = rng.randint(lo, hi)
        for first, last in ((start, hi), (lo, start - 1)):
            for p in range(first, last + 1):
                if p not in mine and not self.taken(addr, p):
                    return p
        return 0

    def offer(self, alloc_ports: list[AllocatedPortMapping], sign: int = 1) -> None:
        """Take (or give back) ports of an offer not yet in an alloc (a port given with
        ignore_collision takes nothing)."""
        for p in alloc_ports:
            if p.ignore_collision:
                continue
            used = self.used.setdefault(p.host_ip, Counter())
            used[p.value] += sign
            if used[p.value] <= 0:
                del used[p.value]
