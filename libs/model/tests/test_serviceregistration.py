"""Service registrations: IDs and addresses as Nomad's client forms them, the servers' tag
filter, list stubs and rendezvous choice, and what the reducer keeps and drops."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from drover.model import Allocation, Node
from drover.model.allocated import AllocatedResources, AllocatedSharedResources
from drover.model.changes import TrackedState
from drover.model.events import (
    AllocClientUpdate,
    AllocsClientUpdated,
    NodeDeregistered,
    NodeRegistered,
    NodeStatusUpdated,
    ServicesDeregistered,
    ServicesRegistered,
)
from drover.model.network import AllocatedPortMapping, NetworkResource
from drover.model.reducer import apply
from drover.model.serviceregistration import (
    ServiceRegistration,
    choose,
    list_stubs,
    nomad_services,
    parse_choose,
    service_address,
    service_id,
    with_tag,
    workload_name,
)
from drover.model.services import Service
from drover.model.streamevents import stream_events

ALLOC = "b4e61df9-b095-d64e-f241-23860da1375f"


@pytest.mark.parametrize(
    ("group", "task", "service", "want"),
    [
        (
            "cache",
            "redis",
            {"Name": "redis-http", "PortLabel": "http"},
            f"_nomad-task-{ALLOC}-redis-redis-http-http",
        ),
        ("web", None, {"Name": "web", "PortLabel": "http"}, f"_nomad-task-{ALLOC}-group-web-web-http"),
        ("web", None, {"Name": "web"}, f"_nomad-task-{ALLOC}-group-web-web-"),
        ("web", "", {"Name": "api", "PortLabel": "8080"}, f"_nomad-task-{ALLOC}-group-web-api-8080"),
    ],
)
def test_service_ids_are_nomads(group: str, task: str | None, service: dict[str, Any], want: str) -> None:
    assert service_id(ALLOC, workload_name(group, task), Service.model_validate(service)) == want


RES = AllocatedResources(
    shared=AllocatedSharedResources(
        networks=[NetworkResource(ip="10.0.0.5")],
        ports=[
            AllocatedPortMapping(label="http", value=23456, to=8080, host_ip="10.0.0.5"),
            AllocatedPortMapping(label="admin", value=9900, host_ip="127.0.0.1"),
        ],
    )
)


@pytest.mark.parametrize(
    ("service", "want"),
    [
        ({"PortLabel": "http"}, ("10.0.0.5", 23456)),  # the label's host IP and value, not To
        ({"PortLabel": "admin", "AddressMode": "host"}, ("127.0.0.1", 9900)),
        ({"PortLabel": "8443"}, ("10.0.0.5", 8443)),  # a number: on the alloc's address
        ({}, ("10.0.0.5", 0)),
        ({"Address": "svc.example", "PortLabel": "http"}, ("svc.example", 23456)),
        ({"Address": "svc.example", "PortLabel": "81"}, ("svc.example", 81)),
        ({"Address": "svc.example"}, ("svc.example", 0)),
    ],
)
def test_service_address(service: dict[str, Any], want: tuple[str, int]) -> None:
    assert service_address(Service.model_validate(service), RES) == want


@pytest.mark.parametrize(
    ("service", "problem"),
    [
        ({"PortLabel": "nope"}, "port label not found"),
        ({"PortLabel": "0"}, "must be >0"),
        ({"Address": "x", "AddressMode": "host", "PortLabel": "http"}, "custom advertise address"),
        ({"AddressMode": "driver", "PortLabel": "http"}, "driver"),
    ],
)
def test_service_address_refused(service: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        service_address(Service.model_validate(service), RES)


def test_only_nomad_services_are_registered() -> None:
    services = [Service(name="a", provider="nomad"), Service(name="b", provider="consul"), Service(name="c")]
    assert [s.name for s in nomad_services(services)] == ["a"]


def _reg(i: str, name: str = "web", tags: list[str] | None = None, **kw: Any) -> ServiceRegistration:
    return ServiceRegistration(
        id=f"s{i}", service_name=name, alloc_id=f"a{i}", node_id="n1", job_id="j", address="10.0.0.1",
        port=20000 + int(i), tags=tags or [], **kw,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("tag", "want"),
    [("", ["s1", "s2", "s3"]), ("v1", ["s1", "s3"]), ("v2", ["s2"]), ("v3", [])],
)
def test_tag_filter(tag: str, want: list[str]) -> None:
    regs = [_reg("1", tags=["v1", "x"]), _reg("2", tags=["v2"]), _reg("3", tags=["v1"])]
    assert [r.id for r in with_tag(regs, tag)] == want


def test_list_stubs_merge_tags_by_namespace_and_name() -> None:
    regs = [
        _reg("1", "web", ["b", "a"]),
        _reg("2", "web", ["c", "a"]),
        _reg("3", "db"),
        _reg("4", "web", namespace="prod"),
    ]
    out = [s.to_api() for s in list_stubs(regs)]
    assert out == [
        {"Namespace": "default", "Services": [{"ServiceName": "db", "Tags": []},
                                              {"ServiceName": "web", "Tags": ["a", "b", "c"]}]},
        {"Namespace": "prod", "Services": [{"ServiceName": "web", "Tags": []}]},
    ]  # fmt: skip


def _nomad_hash(r: ServiceRegistration, key: str) -> str:
    """Nomad's HashWith written out: the port as 8 big-endian bytes, then the strings."""
    data = r.port.to_bytes(8, "big") + b"".join(
        s.encode() for s in (r.alloc_id, r.id, r.namespace, r.address, r.service_name, *r.tags, key)
    )
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("n", "key"), [(1, "alloc-a"), (2, "alloc-a"), (2, "alloc-b"), (3, "k"), (9, "k"), (0, "k")]
)
def test_choose_is_rendezvous_hashing(n: int, key: str) -> None:
    regs = [_reg(str(i), tags=["t"] if i % 2 else []) for i in range(1, 6)]
    want = sorted(regs, key=lambda r: _nomad_hash(r, key))[:n]
    assert [r.id for r in choose(regs, n, key)] == [r.id for r in want]
    # The same key chooses the same ones whatever order the registrations come in.
    assert choose(list(reversed(regs)), n, key) == choose(regs, n, key)


def test_choose_moves_little_when_one_goes() -> None:
    regs = [_reg(str(i)) for i in range(1, 9)]
    first = choose(regs, 3, "me")
    rest = [r for r in regs if r.id != first[0].id]
    assert choose(rest, 3, "me")[:2] == first[1:]


@pytest.mark.parametrize(
    ("param", "want"),
    [("2|abc", (2, "abc")), ("0|k|x", (0, "k|x")), ("2", None), ("x|k", None), ("2|", None), ("-1|k", None)],
)
def test_parse_choose(param: str, want: tuple[int, str] | None) -> None:
    if want is None:
        with pytest.raises(ValueError, match="malformed choose"):
            parse_choose(param)
    else:
        assert parse_choose(param) == want


# --- the reducer ---


def _state() -> TrackedState:
    state = TrackedState()
    apply(state, 1, NodeRegistered(node=Node(id="n1")))
    apply(state, 2, NodeRegistered(node=Node(id="n2")))
    for i, node in (("1", "n1"), ("2", "n1"), ("3", "n2")):
        state.upsert_alloc(Allocation(id=f"a{i}", job_id="j", node_id=node, client_status="running"))
    return state


def _registered(state: TrackedState) -> list[str]:
    return sorted(state.services)


def test_registrations_keep_their_create_index_and_skip_repeats() -> None:
    state = _state()
    out = stream_events(state, 5, ServicesRegistered(node_id="n1", services=[_reg("1"), _reg("2")]))
    assert [(e["Topic"], e["Type"], e["Key"], e["FilterKeys"]) for e in out] == [
        ("Service", "ServiceRegistration", "s1", ["j", "web"]),
        ("Service", "ServiceRegistration", "s2", ["j", "web"]),
    ]
    assert out[0]["Payload"]["Service"]["Port"] == 20001
    assert stream_events(state, 6, ServicesRegistered(services=[_reg("1")])) == []  # unchanged
    apply(state, 7, ServicesRegistered(services=[_reg("1", tags=["new"])]))
    s1 = state.services["s1"]
    assert (s1.create_index, s1.modify_index, s1.tags) == (5, 7, ["new"])


def test_no_registration_for_an_unknown_or_ended_alloc() -> None:
    state = _state()
    apply(state, 3, AllocsClientUpdated(updates=[AllocClientUpdate(id="a2", client_status="complete")]))
    apply(state, 4, ServicesRegistered(services=[_reg("1"), _reg("2"), _reg("9")]))
    assert _registered(state) == ["s1"]


@pytest.mark.parametrize(
    ("event", "left"),
    [
        (ServicesDeregistered(ids=["s1", "s9"]), ["s2", "s3"]),
        (NodeStatusUpdated(node_id="n1", status="down"), ["s3"]),
        (NodeStatusUpdated(node_id="n1", status="disconnected"), ["s1", "s2", "s3"]),
        (NodeDeregistered(node_id="n2"), ["s1", "s2"]),
        (AllocsClientUpdated(updates=[AllocClientUpdate(id="a2", client_status="failed")]), ["s1", "s3"]),
        (
            AllocsClientUpdated(updates=[AllocClientUpdate(id="a2", client_status="running")]),
            ["s1", "s2", "s3"],
        ),
    ],
)
def test_what_drops_registrations(event: Any, left: list[str]) -> None:
    state = _state()
    regs = [_reg("1"), _reg("2"), _reg("3")]
    regs[2] = regs[2].model_copy(update={"node_id": "n2"})
    apply(state, 5, ServicesRegistered(services=regs))
    out = stream_events(state, 6, event)
    assert _registered(state) == left
    gone = sorted({"s1", "s2", "s3"} - set(left))
    assert sorted(e["Key"] for e in out if e["Topic"] == "Service") == gone
    assert {e["Type"] for e in out if e["Topic"] == "Service"} <= {"ServiceDeregistration"}
