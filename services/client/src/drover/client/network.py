"""The node's networks, as Nomad's network fingerprinter finds them: the interfaces and their
addresses (read from the kernel over netlink: the standard library's sockets, no `ip` binary
nor psutil, which a container may lack), the default route's interface (/proc/net/route),
and from them what the node registers:

- `NodeResources.Networks`: one host-mode network per address of the `network_interface` (the
  default route's, or loopback when there is none), link-local ones only if it has no other;
- `NodeResources.NodeNetworks`: every interface with an address, each address aliased
  "default" on the `network_interface` and by the name of each `host_network` whose
  interface and CIDR it matches (an address with no alias is left out);
- the attribute `unique.network.ip-address`: the first address of the first of them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

from drover.model.network import (
    DEFAULT_HOST_NETWORK,
    NETWORK_MODE_HOST,
    ClientHostNetworkConfig,
    NetworkResource,
    NodeNetworkAddress,
    NodeNetworkResource,
)

# A link's speed when the kernel does not say (Nomad's default, Mbit/s).
DEFAULT_SPEED = 1000
LOOPBACK = "lo"

# Netlink (rtnetlink(7)): a dump of every address.
_RTM_NEWADDR, _RTM_GETADDR = 20, 22
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_IFA_ADDRESS, _IFA_LOCAL = 1, 2
_NLMSGHDR = struct.Struct("=LHHLL")
_IFADDRMSG = struct.Struct("=BBBBI")
_RTATTR = struct.Struct("=HH")


@dataclass
class Interface:
    name: str
    mac: str = ""
    speed: int = DEFAULT_SPEED
    addresses: list[str] = field(default_factory=list)  # as the kernel lists them


def _align(n: int) -> int:
    return (n + 3) & ~3


def _netlink_addresses() -> dict[int, list[str]]:
    """Every address of every interface, by interface index."""
    out: dict[int, list[str]] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as s:
        body = _IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
        s.sendall(
            _NLMSGHDR.pack(_NLMSGHDR.size + len(body), _RTM_GETADDR, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0)
            + body
        )
        while True:
            data = s.recv(65536)
            offset = 0
            while offset + _NLMSGHDR.size <= len(data):
                length, kind, _, _, _ = _NLMSGHDR.unpack_from(data, offset)
                if kind == _NLMSG_DONE:
                    return out
                if kind == _NLMSG_ERROR:
                    raise OSError("netlink refused the address dump")
                if kind == _RTM_NEWADDR:
                    family, index, addr = _parse_addr(data[offset + _NLMSGHDR.size : offset + length])
                    if addr:
                        out.setdefault(index, []).append(socket.inet_ntop(family, addr))
                offset += _align(length) if length else len(data)


def _parse_addr(msg: bytes) -> tuple[int, int, bytes]:
    """(family, interface index, address) of an RTM_NEWADDR message; IFA_LOCAL is the local
    end of a point-to-point link, so it wins over IFA_ADDRESS."""
    family, _, _, _, index = _IFADDRMSG.unpack_from(msg)
    attrs: dict[int, bytes] = {}
    offset = _IFADDRMSG.size
    while offset + _RTATTR.size <= len(msg):
        length, kind = _RTATTR.unpack_from(msg, offset)
        if length < _RTATTR.size:
            break
        attrs[kind] = msg[offset + _RTATTR.size : offset + length]
        offset += _align(length)
    return family, index, attrs.get(_IFA_LOCAL) or attrs.get(_IFA_ADDRESS, b"")


def _sys(name: str, what: str) -> str:
    try:
        return (Path("/sys/class/net") / name / what).read_text().strip()
    except OSError:  # no such file, or "Invalid argument" for a virtual link's speed
        return ""


def read_interfaces() -> list[Interface]:
    """This host's interfaces with their addresses, in index order."""
    try:
        by_index = _netlink_addresses()
    except OSError:
        by_index = {}
    out = []
    for index, name in socket.if_nameindex():
        speed = _sys(name, "speed")
        mac = _sys(name, "address")
        out.append(
            Interface(
                name=name,
                mac="" if mac == "00:00:00:00:00:00" else mac,
                speed=int(speed) if speed.lstrip("-").isdigit() and int(speed) > 0 else DEFAULT_SPEED,
                addresses=by_index.get(index, []),
            )
        )
    return out


def default_route_interface() -> str:
    """The interface of the default IPv4 route with the lowest metric ("" when there is none)."""
    best: tuple[int, str] | None = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/route").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 8 and fields[1] == "00000000" and fields[7] == "00000000":
                flags, metric = int(fields[3], 16), int(fields[6])
                if flags & 0x1 and (best is None or metric < best[0]):  # RTF_UP
                    best = (metric, fields[0])
    return best[1] if best is not None else ""


def _aliases(
    iface: str,
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
    network_interface: str,
    host_networks: dict[str, ClientHostNetworkConfig],
) -> list[str]:
    """The host networks an address serves: each whose interface and CIDR blocks (when given)
    match it, then "default" on the network interface."""
    out = []
    for name, hn in host_networks.items():
        blocks = [b.strip() for b in hn.cidr.split(",") if b.strip()]
        cidr_match = not blocks or any(ip in ipaddress.ip_network(b, strict=False) for b in blocks)
        if cidr_match and (not hn.interface or hn.interface == iface):
            out.append(name)
    if iface == network_interface:
        out.append(DEFAULT_HOST_NETWORK)
    return out


def _family(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return "ipv4" if ip.version == 4 else "ipv6"


def _ipv4_first(
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address],
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    return sorted(ips, key=lambda ip: ip.version)  # stable: the kernel's order within a family


def node_networks(
    interfaces: list[Interface],
    network_interface: str,
    host_networks: dict[str, ClientHostNetworkConfig],
) -> tuple[list[NetworkResource], list[NodeNetworkResource]]:
    """What the node registers of its networks (NodeResources.Networks, .NodeNetworks), from
    its interfaces and the resolved `network_interface`."""
    networks: list[NetworkResource] = []
    node_nets: list[NodeNetworkResource] = []
    for iface in interfaces:
        ips = _ipv4_first([ipaddress.ip_address(a.split("%")[0]) for a in iface.addresses])
        usable = [ip for ip in ips if not ip.is_link_local] or ips
        if iface.name == network_interface:
            networks = [
                NetworkResource(
                    mode=NETWORK_MODE_HOST,
                    device=iface.name,
                    ip=str(ip),
                    cidr=f"{ip}/{ip.max_prefixlen}",
                    mbits=iface.speed,
                )
                for ip in usable
            ]
        addresses = [
            NodeNetworkAddress(
                family=_family(ip),
                alias=alias,
                address=str(ip),
                reserved_ports=host_networks[alias].reserved_ports if alias in host_networks else "",
            )
            for ip in usable
            for alias in _aliases(iface.name, ip, network_interface, host_networks)
        ]
        if addresses:
            node_nets.append(
                NodeNetworkResource(
                    mode=NETWORK_MODE_HOST,
                    device=iface.name,
                    mac_address=iface.mac,
                    speed=iface.speed,
                    addresses=addresses,
                )
            )
    node_nets.sort(key=lambda n: n.addresses[0].family != "ipv4")
    return networks, node_nets


def chosen_interface(configured: str, default_route: str) -> str:
    """The network interface: the configured one, else the default route's, else loopback."""
    return configured or default_route or LOOPBACK
