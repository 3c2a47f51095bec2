"""Networks and ports: what a group asks for (the `network` block), what a node offers (its
fingerprinted networks, dynamic port range and reserved ports) and what an alloc was given."""

from __future__ import annotations

from pydantic import Field

from drover.model.base import NomadModel

# The default host network every port lives on unless `host_network` names another.
DEFAULT_HOST_NETWORK = "default"
# Nomad's default dynamic port range (structs.DefaultMinDynamicPort/DefaultMaxDynamicPort).
DEFAULT_MIN_DYNAMIC_PORT = 20000
DEFAULT_MAX_DYNAMIC_PORT = 32000
MAX_VALID_PORT = 65535

NETWORK_MODE_HOST = "host"
NETWORK_MODE_BRIDGE = "bridge"
NETWORK_MODE_NONE = "none"
# `cni/<name>` is a mode too; Nomad's validation accepts these and that prefix.
NETWORK_MODES = (NETWORK_MODE_HOST, NETWORK_MODE_BRIDGE, NETWORK_MODE_NONE)
NETWORK_MODE_CNI_PREFIX = "cni/"


class Port(NomadModel):
    """A `port` block: `Value` is the static port (0 for a dynamic one), `To` the port inside
    the task's network namespace (-1: the same as the host's)."""

    label: str = ""
    value: int = 0
    to: int = 0
    host_network: str = ""
    ignore_collision: bool = False


class DNSConfig(NomadModel):
    servers: list[str] = Field(default_factory=list)
    searches: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)


class CNIConfig(NomadModel):
    args: dict[str, str] = Field(default_factory=dict)


class NetworkResource(NomadModel):
    """A `network` block as a group asks for it, and as a node or an alloc holds it (then
    `IP` is the address the ports are on and `DynamicPorts` carry the values assigned)."""

    mode: str = ""
    device: str = ""
    cidr: str = ""
    ip: str = ""
    hostname: str = ""
    mbits: int = 0
    dns: DNSConfig | None = None
    reserved_ports: list[Port] = Field(default_factory=list)
    dynamic_ports: list[Port] = Field(default_factory=list)
    cni: CNIConfig | None = None

    def ports(self) -> list[Port]:
        """Static ports first, then dynamic, as Nomad's NetworkIndex assigns them."""
        return [*self.reserved_ports, *self.dynamic_ports]


class NodeNetworkAddress(NomadModel):
    """One address of a fingerprinted interface; `Alias` is the host network it serves."""

    family: str = "ipv4"
    alias: str = ""
    address: str = ""
    reserved_ports: str = ""
    gateway: str = ""


class NodeNetworkResource(NomadModel):
    """A fingerprinted interface (Nomad's NodeNetworkResource)."""

    mode: str = NETWORK_MODE_HOST
    device: str = ""
    mac_address: str = ""
    speed: int = 0
    addresses: list[NodeNetworkAddress] = Field(default_factory=list)


class ClientHostNetworkConfig(NomadModel):
    """A `host_network` of the client's config: the addresses of an interface or CIDR that
    ports naming it are given."""

    name: str = ""
    cidr: str = ""
    interface: str = ""
    reserved_ports: str = ""


class AllocatedPortMapping(NomadModel):
    """A port as an alloc was given it: its label, host port, mapped port and host address."""

    label: str = ""
    value: int = 0
    to: int = 0
    host_ip: str = Field("", alias="HostIP")
    ignore_collision: bool = False


def parse_port_ranges(spec: str) -> list[int]:
    """ "22,80,8000-8010" -> the ports; raises ValueError naming what is wrong."""
    out: set[int] = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        lo_s, sep, hi_s = part.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if sep else lo
        except ValueError:
            raise ValueError(f"invalid port range {part!r}") from None
        if not 0 < lo <= hi <= MAX_VALID_PORT:
            raise ValueError(f"invalid port range {part!r}")
        out.update(range(lo, hi + 1))
    return sorted(out)
