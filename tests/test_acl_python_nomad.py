"""python-nomad against the relay and an API with ACLs on: with a management token its acl,
namespaces, namespace, agent, operator, regions and status calls work; without a token those
Nomad refuses raise URLNotAuthorizedNomadException, and the open ones (regions, the leader,
the peers) still answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nomad
import pytest
from nomad.api.exceptions import URLNotAuthorizedNomadException, URLNotFoundNomadException

from drover.runtime.embedded import wait_for_port

from .cluster import Cluster


@pytest.fixture
def cluster(database_url: str, nats_url: str, tmp_path: Path, js_fresh: object) -> Iterator[Cluster]:
    """The relay and an API with ACLs on."""
    env = {"DROVER_ACL_ENABLED": "true", "DROVER_DATA_DIR": str(tmp_path / "data")}
    c = Cluster(database_url, nats_url, tmp_path, env=env)
    try:
        c.spawn("relay")
        c.spawn("api")
        wait_for_port(c.port, 60, proc=c.procs["api"][0])
        yield c
    finally:
        c.stop()


def scheduler_configuration(n: nomad.Nomad) -> dict[str, Any]:
    """python-nomad has no call of its own for it: its operator requester, with its token."""
    config: dict[str, Any] = n.operator.request("scheduler", "configuration", method="get").json()
    return config


def test_python_nomads_cluster_calls_with_a_management_token_and_without_one(cluster: Cluster) -> None:
    address = f"http://127.0.0.1:{cluster.port}"
    anonymous = nomad.Nomad(address=address, timeout=30)
    root = anonymous.acl.generate_bootstrap()
    n = nomad.Nomad(address=address, token=root["SecretID"], timeout=30)

    # ACL: policies and tokens.
    assert n.acl.get_self_token()["AccessorID"] == root["AccessorID"]
    assert n.acl.create_policy(
        "reader", {"Name": "reader", "Rules": 'namespace "default" { policy = "read" }'}
    ).ok
    assert [p["Name"] for p in n.acl.get_policies()] == ["reader"]
    token = n.acl.create_token({"Name": "ci", "Type": "client", "Policies": ["reader"]})
    assert {t["AccessorID"] for t in n.acl.get_tokens()} == {root["AccessorID"], token["AccessorID"]}
    assert n.acl.get_token(token["AccessorID"])["Policies"] == ["reader"]

    # Namespaces: listed, created, read, deleted.
    assert [ns["Name"] for ns in n.namespaces.get_namespaces()] == ["default"]
    assert n.namespace.create_namespace({"Name": "prod", "Description": "production"}).ok
    assert n.namespace.get_namespace("prod")["Description"] == "production"
    assert [ns["Name"] for ns in n.namespaces.get_namespaces()] == ["default", "prod"]
    assert n.namespace.delete_namespace("prod").ok
    with pytest.raises(URLNotFoundNomadException):
        n.namespace.get_namespace("prod")

    # The agent, the operator, the regions and the status.
    agent = n.agent.get_agent()
    assert agent["member"]["Name"] and agent["config"]
    members = n.agent.get_members()["Members"]
    # This server among them (another test's API, in this process, may be listed too).
    assert agent["member"]["Name"] in [m["Name"] for m in members]
    raft = n.operator.get_configuration()
    assert [s["Leader"] for s in raft["Servers"]] == [True]
    config = scheduler_configuration(n)["SchedulerConfig"]
    assert config["SchedulerAlgorithm"] in ("binpack", "spread")
    assert n.regions.get_regions() == ["global"]
    leader = n.status.leader.get_leader()
    assert leader and n.status.peers.get_peers() == [leader]

    # Without a token: refused where Nomad refuses (the anonymous token holds no policy).
    refused: list[Callable[[], Any]] = [
        anonymous.acl.get_tokens,
        lambda: anonymous.acl.get_token(token["AccessorID"]),
        lambda: anonymous.acl.get_policy("reader"),
        lambda: anonymous.acl.create_token({"Type": "management"}),
        lambda: anonymous.namespace.get_namespace("default"),
        lambda: anonymous.namespace.create_namespace({"Name": "sneaky"}),
        lambda: anonymous.namespace.delete_namespace("default"),
        anonymous.agent.get_agent,
        anonymous.agent.get_members,
        anonymous.operator.get_configuration,
        lambda: scheduler_configuration(anonymous),
    ]
    for call in refused:
        with pytest.raises(URLNotAuthorizedNomadException):
            call()
    # Lists filtered to what the anonymous token may see, and Nomad's open endpoints.
    assert anonymous.namespaces.get_namespaces() == []
    assert anonymous.acl.get_policies() == []
    assert anonymous.regions.get_regions() == ["global"]
    assert anonymous.status.leader.get_leader() == leader
    assert anonymous.status.peers.get_peers() == [leader]
    # Nothing the refusals asked for was made.
    assert [ns["Name"] for ns in n.namespaces.get_namespaces()] == ["default"]
    assert len(n.acl.get_tokens()) == 2

    # A client token: what its policy grants, nothing more.
    reader = nomad.Nomad(address=address, token=token["SecretID"], timeout=30)
    assert reader.namespace.get_namespace("default")["Name"] == "default"
    assert [ns["Name"] for ns in reader.namespaces.get_namespaces()] == ["default"]
    for call in (reader.agent.get_agent, reader.operator.get_configuration, reader.acl.get_tokens):
        with pytest.raises(URLNotAuthorizedNomadException):
            call()
