"""The agent's networks, ports and host volumes: its configuration in Nomad's client layout
(every problem listed), the node networks derived from interfaces (table-driven), this host's
interfaces read over netlink, and the node it registers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from drover.client.config import AgentConfig, load
from drover.client.fingerprint import fingerprint
from drover.client.network import Interface, chosen_interface, node_networks, read_interfaces
from drover.client.service import parse
from drover.client.simnodes import sim_address, sim_node
from drover.model.network import ClientHostNetworkConfig
from drover.model.node import Node


def test_networks_ports_and_host_volumes_from_the_config_file(tmp_path: Path) -> None:
    (data := tmp_path / "data").mkdir()
    (f := tmp_path / "agent.hcl").write_text(
        f"""
        region = "europe"
        client {{
          network_interface = "lo"
          min_dynamic_port = 21000
          max_dynamic_port = 21999
          max_kill_timeout = "10s"
          reserved {{ reserved_ports = "22,80-90" }}
          host_network "public" {{
            cidr = "127.0.0.0/8, ::1/128"
            reserved_ports = "8080"
          }}
          host_network "loop" {{ interface = "lo" }}
          host_volume "data" {{
            path = "{data}"
            read_only = true
          }}
        }}
        """
    )
    cfg = load(f)
    assert (cfg.region, cfg.network_interface) == ("europe", "lo")
    assert (cfg.min_dynamic_port, cfg.max_dynamic_port, cfg.reserved_ports) == (21000, 21999, "22,80-90")
    assert cfg.max_kill_timeout == 10 * 10**9
    assert cfg.host_networks["public"] == ClientHostNetworkConfig(
        name="public", cidr="127.0.0.0/8, ::1/128", reserved_ports="8080"
    )
    assert cfg.host_networks["loop"].interface == "lo"
    assert cfg.host_volumes["data"].path == str(data) and cfg.host_volumes["data"].read_only

    node = fingerprint("n1", dataclasses.replace(cfg, data_dir=str(tmp_path / "d")))
    res = node.node_resources
    assert next((n.device, n.ip, n.cidr, n.mode) for n in res.networks) == (
        "lo",
        "127.0.0.1",
        "127.0.0.1/32",
        "host",
    )
    assert node.attributes["unique.network.ip-address"] == "127.0.0.1"
    (lo,) = [n for n in res.node_networks if n.device == "lo"]
    aliases = {(a.address, a.alias, a.reserved_ports) for a in lo.addresses}
    assert {
        ("127.0.0.1", "default", ""),
        ("127.0.0.1", "public", "8080"),
        ("127.0.0.1", "loop", ""),
    } <= aliases
    assert (res.min_dynamic_port, res.max_dynamic_port) == (21000, 21999)
    assert node.reserved_resources.networks.reserved_host_ports == "22,80-90"
    assert set(node.host_volumes) == {"data"} and set(node.host_networks) == {"public", "loop"}
    # the API form carries them under Nomad's names
    api = node.to_api()
    assert api["NodeResources"]["NodeNetworks"][0]["Addresses"][0]["Alias"]
    assert api["HostVolumes"]["data"]["Path"] == str(data)
    assert api["ReservedResources"]["Networks"]["ReservedHostPorts"] == "22,80-90"


def test_a_bad_network_config_is_refused_with_every_reason(tmp_path: Path) -> None:
    (f := tmp_path / "agent.hcl").write_text(
        """
        client {
          network_interface = "nosuch0"
          min_dynamic_port = 30000
          max_dynamic_port = 70000
          reserved { reserved_ports = "22,x" }
          host_network "a" {
            cidr = "10.0.0.0/33"
            interface = "nosuch1"
            speed = 10
          }
          host_network "a" { cidr = "10.0.0.0/8" }
          host_volume "rel" { path = "srv/data" }
          host_volume "gone" {
            path = "/nonexistent/drover"
            read_only = "yes"
          }
        }
        """
    )
    with pytest.raises(ValueError) as e:
        load(f)
    msg = str(e.value)
    for part in (
        "client.network_interface: no interface 'nosuch0'",
        "client.max_dynamic_port: must be a port",
        "client.reserved.reserved_ports: invalid port range 'x'",
        """client.host_network "a": cidr: '10.0.0.0/33' is not a CIDR block""",
        """client.host_network "a": interface: no interface 'nosuch1'""",
        """client.host_network "a": unknown key 'speed'""",
        """client.host_network "a": defined more than once""",
        """client.host_volume "rel": path must be an absolute path""",
        """client.host_volume "gone": path '/nonexistent/drover' is not a directory""",
        """client.host_volume "gone": read_only must be true or false""",
    ):
        assert part in msg, (part, msg)
    (f := tmp_path / "agent2.hcl").write_text(
        "client {\n min_dynamic_port = 30000\n max_dynamic_port = 25000\n}\n"
    )
    with pytest.raises(
        ValueError, match=r"min_dynamic_port \(30000\) is above client.max_dynamic_port \(25000\)"
    ):
        load(f)


def test_flags_name_the_network_interface_and_region() -> None:
    cfg = parse(["--network-interface", "lo", "--region", "asia"])
    assert (cfg.network_interface, cfg.region) == ("lo", "asia")
    with pytest.raises(SystemExit):
        parse(["--network-interface", "nosuch0"])


ETH0 = Interface("eth0", mac="02:00:00:00:00:01", speed=10000, addresses=["10.1.2.3", "fe80::1", "fd00::3"])
ETH1 = Interface("eth1", addresses=["192.168.7.9"])
LO = Interface("lo", addresses=["127.0.0.1", "::1"])
LINK_LOCAL_ONLY = Interface("eth2", addresses=["fe80::2"])


@pytest.mark.parametrize(
    ("interfaces", "interface", "host_networks", "networks", "aliases"),
    [
        # the default route's interface: its addresses, link-local ones left out
        (
            [LO, ETH0],
            "eth0",
            {},
            [("eth0", "10.1.2.3", "10.1.2.3/32", 10000), ("eth0", "fd00::3", "fd00::3/128", 10000)],
            {("eth0", "10.1.2.3", "default"), ("eth0", "fd00::3", "default")},
        ),
        # a host network by CIDR and one by interface; an address with no alias is left out
        (
            [LO, ETH0, ETH1],
            "eth0",
            {
                "private": ClientHostNetworkConfig(name="private", cidr="192.168.0.0/16"),
                "loop": ClientHostNetworkConfig(name="loop", interface="lo", cidr="127.0.0.0/8"),
            },
            [("eth0", "10.1.2.3", "10.1.2.3/32", 10000), ("eth0", "fd00::3", "fd00::3/128", 10000)],
            {
                ("eth0", "10.1.2.3", "default"),
                ("eth0", "fd00::3", "default"),
                ("eth1", "192.168.7.9", "private"),
                ("lo", "127.0.0.1", "loop"),
            },
        ),
        # an interface with only a link-local address offers it
        (
            [LINK_LOCAL_ONLY],
            "eth2",
            {},
            [("eth2", "fe80::2", "fe80::2/128", 1000)],
            {("eth2", "fe80::2", "default")},
        ),
        # loopback named as the network interface
        (
            [LO, ETH0],
            "lo",
            {},
            [("lo", "127.0.0.1", "127.0.0.1/32", 1000), ("lo", "::1", "::1/128", 1000)],
            {("lo", "127.0.0.1", "default"), ("lo", "::1", "default")},
        ),
    ],
)
def test_node_networks_from_interfaces(
    interfaces: list[Interface],
    interface: str,
    host_networks: dict[str, ClientHostNetworkConfig],
    networks: list[tuple[str, str, str, int]],
    aliases: set[tuple[str, str, str]],
) -> None:
    nets, node_nets = node_networks(interfaces, interface, host_networks)
    assert [(n.device, n.ip, n.cidr, n.mbits) for n in nets] == networks
    assert all(n.mode == "host" for n in nets)
    assert {(nn.device, a.address, a.alias) for nn in node_nets for a in nn.addresses} == aliases


@pytest.mark.parametrize(
    ("configured", "default_route", "chosen"), [("lo", "eth0", "lo"), ("", "eth0", "eth0"), ("", "", "lo")]
)
def test_the_network_interface_is_the_configured_one_else_the_default_routes_else_loopback(
    configured: str, default_route: str, chosen: str
) -> None:
    assert chosen_interface(configured, default_route) == chosen


def test_this_hosts_interfaces_are_read_over_netlink() -> None:
    (lo,) = [i for i in read_interfaces() if i.name == "lo"]
    assert "127.0.0.1" in lo.addresses


def test_simulated_nodes_have_a_default_host_network_of_their_own() -> None:
    nodes = [Node.model_validate(sim_node(i, "sim-", 2, 5, ["mock"], 4000, 8192)) for i in range(300)]
    ips = {n.node_resources.networks[0].ip for n in nodes}
    assert len(ips) == 300 and sim_address(0) == "10.0.0.1" and sim_address(255) == "10.0.1.0"
    n = nodes[7]
    assert n.node_resources.node_networks[0].addresses[0].alias == "default"
    assert n.node_resources.node_networks[0].addresses[0].address == n.attributes["unique.network.ip-address"]
    assert (n.node_resources.min_dynamic_port, n.node_resources.max_dynamic_port) == (20000, 32000)


def test_a_default_config_has_nomads_port_range() -> None:
    cfg = AgentConfig()
    assert (cfg.min_dynamic_port, cfg.max_dynamic_port, cfg.network_interface) == (20000, 32000, "")
