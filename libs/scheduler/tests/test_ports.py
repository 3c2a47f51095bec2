"""Ports, as Nomad's NetworkIndex gives them: static ports never given twice on a node (or
where the node reserves them), dynamic ports drawn from the node's range without collision,
the network and host volumes feasibility checks, and the plan applier's re-check."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.model import Allocation, Job, Node
from drover.model.alloc import ALLOC_CLIENT_RUNNING
from drover.model.allocated import AllocatedResources, AllocatedSharedResources
from drover.model.network import (
    AllocatedPortMapping,
    NetworkResource,
    NodeNetworkAddress,
    NodeNetworkResource,
    Port,
)
from drover.model.node import NodeReservedNetworkResources, NodeReservedResources
from drover.model.volumes import ClientHostVolumeConfig, VolumeRequest
from drover.scheduler.harness import Harness
from drover.scheduler.netindex import NetworkIndex, PortAsk, network_feasibility
from drover.scheduler.planapply import evaluate_plan
from drover.scheduler.schedule import schedule

from .conftest import make_eval, make_job, make_node


def net_node(
    node_id: str, *, ip: str = "", reserved: str = "", lo: int = 20000, hi: int = 32000, **kw: Any
) -> Node:
    """A node with a host network "default" on one address, as the agent fingerprints it."""
    node = make_node(node_id, **kw)
    address = ip or f"10.0.{int(node_id.strip('n') or 0) // 250}.{int(node_id.strip('n') or 0) % 250 + 1}"
    node.node_resources.networks = [NetworkResource(mode="host", device="eth0", ip=address)]
    node.node_resources.node_networks = [
        NodeNetworkResource(device="eth0", addresses=[NodeNetworkAddress(alias="default", address=address)])
    ]
    node.node_resources.min_dynamic_port, node.node_resources.max_dynamic_port = lo, hi
    node.reserved_resources = NodeReservedResources(
        networks=NodeReservedNetworkResources(reserved_host_ports=reserved)
    )
    return node


def ports_job(
    job_id: str = "web", *, count: int, static: dict[str, int] | None = None, dynamic: int = 0, **kw: Any
) -> Job:
    network = NetworkResource(
        reserved_ports=[Port(label=label, value=v) for label, v in (static or {}).items()],
        dynamic_ports=[Port(label=f"d{i}") for i in range(dynamic)],
    )
    return make_job(job_id, count=count, cpu=10, mem=10, networks=[network], **kw)


def run(h: Harness, job: Job) -> Any:
    h.state.upsert_job(job)
    return h.process(make_eval(job))


def live(h: Harness) -> list[Allocation]:
    return [a for a in h.state.allocs.values() if not a.terminal_status()]


def given_ports(allocs: list[Allocation]) -> Counter[tuple[str, str, int]]:
    """(node, address, port) -> how many live allocs hold it."""
    out: Counter[tuple[str, str, int]] = Counter()
    for a in allocs:
        assert a.allocated_resources is not None
        for p in a.allocated_resources.shared.ports:
            out[(a.node_id, p.host_ip, p.value)] += 1
    return out


def test_a_static_port_is_given_once_per_node_and_the_collision_is_reported() -> None:
    h = Harness()
    for i in (1, 2):
        h.state.upsert_node(net_node(f"n{i}"))
    res = run(h, ports_job(count=3, static={"admin": 9900}))
    placed = live(h)
    assert len(placed) == 2 and {a.node_id for a in placed} == {"n1", "n2"}
    assert max(given_ports(placed).values()) == 1
    metric = res.eval.failed_tg_allocs["g"]
    assert metric.dimension_exhausted == {"network: reserved port collision admin=9900": 2}
    assert metric.nodes_exhausted == 2
    assert res.eval.queued_allocations == {"g": 1}


def test_dynamic_ports_are_inside_the_range_and_never_given_twice_on_a_node() -> None:
    h = Harness()
    for i in (1, 2):
        h.state.upsert_node(net_node(f"n{i}", cpu=100_000, mem=100_000))
    run(h, ports_job(count=200, dynamic=2))
    placed = live(h)
    assert len(placed) == 200
    held = given_ports(placed)
    assert len(held) == 400 and max(held.values()) == 1
    assert all(20000 <= port <= 32000 for _, _, port in held)
    alloc = placed[0]
    assert alloc.allocated_resources is not None
    shared = alloc.allocated_resources.shared
    node_ip = {"n1": "10.0.0.2", "n2": "10.0.0.3"}[alloc.node_id]
    assert shared.networks[0].ip == node_ip and shared.networks[0].mode == "host"
    assert [p.label for p in shared.networks[0].dynamic_ports] == ["d0", "d1"]
    assert [p.value for p in shared.networks[0].dynamic_ports] == [p.value for p in shared.ports]


def test_reserved_ports_and_the_range_bound_what_is_given() -> None:
    h = Harness()
    # The node reserves 9900 and has a range of four ports, one of them reserved.
    h.state.upsert_node(net_node("n1", reserved="9900,30001", lo=30000, hi=30003))
    res = run(h, ports_job(count=1, static={"admin": 9900}))
    assert res.eval.failed_tg_allocs["g"].dimension_exhausted == {
        "network: reserved port collision admin=9900": 1
    }
    run(h, ports_job("dyn", count=4, dynamic=1))
    held = sorted(port for _, _, port in given_ports(live(h)))
    assert held == [30000, 30002, 30003]  # three free ports in the range: three placed
    failed = h.results[-1].eval.failed_tg_allocs["g"]
    assert failed.dimension_exhausted == {"network: dynamic port selection failed": 1}


def test_ports_are_free_again_once_their_alloc_stops() -> None:
    h = Harness()
    h.state.upsert_node(net_node("n1"))
    job = ports_job(count=1, static={"admin": 9900})
    run(h, job)
    (a,) = live(h)
    h.state.upsert_alloc(a.model_copy(update={"client_status": "complete"}))
    run(h, ports_job("other", count=1, static={"admin": 9900}))
    assert [x.job_id for x in live(h)] == ["other"]


def test_ports_across_jobs_and_groups_on_one_node_never_collide() -> None:
    h = Harness()
    h.state.upsert_node(net_node("n1", lo=20000, hi=20009, cpu=100_000, mem=100_000))
    run(h, ports_job("a", count=3, static={"http": 20005}, dynamic=1, constraints=[]))
    run(h, ports_job("b", count=6, dynamic=1))
    held = given_ports(live(h))
    assert max(held.values()) == 1
    # One static (20005) and 1 + 6 dynamic from 10 ports: a got one alloc (its static port
    # once), b all six.
    assert Counter(a.job_id for a in live(h)) == {"a": 1, "b": 6}


def _racing_plans(h: Harness, job_a: Job, job_b: Job) -> tuple[Any, Any]:
    for job in (job_a, job_b):
        h.state.upsert_job(job)
    # Both scheduled on the same snapshot, as two workers would.
    ra = schedule(h.state, make_eval(job_a), h.now)
    rb = schedule(h.state, make_eval(job_b), h.now)
    return ra, rb


def test_the_plan_applier_refuses_a_port_another_plan_took_first() -> None:
    from drover.scheduler.planapply import apply_plan_result

    h = Harness()
    h.state.upsert_node(net_node("n1"))
    ra, rb = _racing_plans(
        h, ports_job("a", count=1, static={"http": 8080}), ports_job("b", count=1, static={"http": 8080})
    )
    assert len(ra.plan.placements()) == 1 and len(rb.plan.placements()) == 1
    first = evaluate_plan(h.state, ra.plan)
    assert first.rejected_nodes == []
    apply_plan_result(h.state, first, h.state.index + 1, h.now)
    second = evaluate_plan(h.state, rb.plan)
    assert second.rejected_nodes == ["n1"]


def test_the_plan_applier_refuses_a_dynamic_port_given_twice() -> None:
    h = Harness()
    h.state.upsert_node(net_node("n1"))
    job = ports_job("a", count=2, dynamic=1)
    h.state.upsert_job(job)
    res = schedule(h.state, make_eval(job), h.now)
    placements = res.plan.placements()
    assert len(placements) == 2
    # Make the second alloc hold the first one's port: the applier must refuse the node.
    first = placements[0].allocated_resources
    assert first is not None
    clash = placements[1].model_copy(update={"allocated_resources": first})
    res.plan.node_allocation["n1"] = [placements[0], clash]
    assert evaluate_plan(h.state, res.plan).rejected_nodes == ["n1"]


def test_a_system_job_with_a_static_port_skips_the_node_that_holds_it() -> None:
    h = Harness()
    for i in (1, 2):
        h.state.upsert_node(net_node(f"n{i}"))
    run(h, ports_job("svc", count=1, static={"metrics": 9100}))
    (taken,) = live(h)
    res = run(h, ports_job("exporter", count=1, static={"metrics": 9100}, job_type="system"))
    exporters = [a for a in live(h) if a.job_id == "exporter"]
    assert [a.node_id for a in exporters] == [n for n in ("n1", "n2") if n != taken.node_id]
    assert res.eval.failed_tg_allocs["g"].dimension_exhausted == {
        "network: reserved port collision metrics=9100": 1
    }


def test_groups_without_a_network_get_their_allocated_resources_without_ports() -> None:
    h = Harness()
    h.state.upsert_node(make_node("n1"))
    run(h, make_job(count=2, cpu=10, mem=10))
    for a in live(h):
        assert a.allocated_resources is not None
        assert (
            a.allocated_resources.shared.ports == [] and a.allocated_resources.tasks["t"].cpu.cpu_shares == 10
        )


# --- feasibility --------------------------------------------------------------------------


def test_a_node_without_the_network_or_host_network_is_filtered_with_nomads_reason() -> None:
    h = Harness()
    h.state.upsert_node(make_node("bare"))  # no networks fingerprinted
    h.state.upsert_node(net_node("n1"))
    public = NetworkResource(dynamic_ports=[Port(label="http", host_network="public")])
    res = run(h, make_job(count=1, networks=[public]))
    metric = res.eval.failed_tg_allocs["g"]
    assert metric.constraint_filtered == {
        "missing network": 1,
        'missing host network "public" for port "http"': 1,
    }
    bridge = NetworkResource(mode="bridge", dynamic_ports=[Port(label="http")])
    res = run(h, make_job("b", count=1, networks=[bridge]))
    assert res.eval.failed_tg_allocs["g"].constraint_filtered == {"missing network": 2}


def test_host_volumes_must_exist_and_be_writable_when_mounted_writable() -> None:
    h = Harness()
    h.state.upsert_node(make_node("none"))
    h.state.upsert_node(
        make_node("ro", host_volumes={"data": ClientHostVolumeConfig(name="data", path="/d", read_only=True)})
    )
    h.state.upsert_node(
        make_node("rw", host_volumes={"data": ClientHostVolumeConfig(name="data", path="/d")})
    )
    res = run(h, make_job(count=1, volumes={"d": VolumeRequest(name="d", type="host", source="data")}))
    assert [a.node_id for a in live(h)] == ["rw"]
    assert res.eval.failed_tg_allocs == {}
    run(
        h,
        make_job(
            "reader",
            count=3,
            volumes={"d": VolumeRequest(name="d", type="host", source="data", read_only=True)},
        ),
    )
    assert sorted(a.node_id for a in live(h) if a.job_id == "reader") == ["ro", "rw", "rw"]
    res = run(h, make_job("x", count=1, volumes={"d": VolumeRequest(name="d", type="host", source="logs")}))
    assert res.eval.failed_tg_allocs["g"].constraint_filtered == {"missing compatible host volumes": 3}


def test_network_feasibility_table() -> None:
    node = net_node("n1")
    cases = [
        (NetworkResource(), None),
        (NetworkResource(mode="host", dynamic_ports=[Port(label="a")]), None),
        (NetworkResource(mode="bridge"), "missing network"),
        (NetworkResource(mode="cni/mynet"), "missing network"),
        (
            NetworkResource(reserved_ports=[Port(label="a", value=80, host_network="x")]),
            'missing host network "x" for port "a"',
        ),
    ]
    for ask, want in cases:
        assert network_feasibility(ask, node) == want, ask


# --- the index itself ---------------------------------------------------------------------


def _holding(*ports: tuple[str, int]) -> Allocation:
    return Allocation(
        id=f"a{ports}",
        client_status=ALLOC_CLIENT_RUNNING,
        allocated_resources=AllocatedResources(
            shared=AllocatedSharedResources(
                ports=[AllocatedPortMapping(label=f"p{v}", value=v, host_ip=ip) for ip, v in ports]
            )
        ),
    )


def test_network_index_collisions_table() -> None:
    node = net_node("n1", ip="10.0.0.1", reserved="22")
    idx = NetworkIndex(node)
    idx.add(_holding(("10.0.0.1", 8080)))
    cases = [
        (
            NetworkResource(reserved_ports=[Port(label="http", value=8080)]),
            "reserved port collision http=8080",
        ),
        (NetworkResource(reserved_ports=[Port(label="ssh", value=22)]), "reserved port collision ssh=22"),
        (NetworkResource(reserved_ports=[Port(label="ok", value=8081)]), None),
        (NetworkResource(reserved_ports=[Port(label="http", value=8080, ignore_collision=True)]), None),
        (NetworkResource(dynamic_ports=[Port(label="d")]), None),
    ]
    for ask, want in cases:
        assert idx.collision(PortAsk.of(ask)) == want, ask
    idx.add(_holding(("10.0.0.1", 8080)), -1)
    assert idx.collision(PortAsk.of(cases[0][0])) is None


def test_network_index_assigns_to_and_the_same_draw_for_the_same_seed() -> None:
    node = net_node("n1", ip="10.0.0.1")
    ask = NetworkResource(
        reserved_ports=[Port(label="s", value=80, to=8080)], dynamic_ports=[Port(label="d", to=-1)]
    )
    got = NetworkIndex(node).assign(PortAsk.of(ask), random.Random(7))
    again = NetworkIndex(node).assign(PortAsk.of(ask), random.Random(7))
    assert got == again and not isinstance(got, str)
    offer, ip = got
    assert ip == "10.0.0.1"
    assert (offer[0].label, offer[0].value, offer[0].to) == ("s", 80, 8080)
    assert offer[1].to == offer[1].value and 20000 <= offer[1].value <= 32000


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.integers(1, 3),
    jobs=st.lists(
        st.tuples(
            st.integers(1, 12),
            st.lists(st.sampled_from([8080, 9000, 9100]), max_size=2, unique=True),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=4,
    ),
    width=st.integers(3, 40),
)
def test_property_no_port_is_ever_given_twice_on_a_node(
    nodes: int, jobs: list[tuple[int, list[int], int]], width: int
) -> None:
    h = Harness()
    for i in range(1, nodes + 1):
        h.state.upsert_node(
            net_node(f"n{i}", lo=30000, hi=30000 + width - 1, reserved="9000", cpu=100_000, mem=100_000)
        )
    for k, (count, static, dynamic) in enumerate(jobs):
        run(h, ports_job(f"j{k}", count=count, static={f"s{v}": v for v in static}, dynamic=dynamic))
        held = given_ports(live(h))
        assert not held or max(held.values()) == 1
        for (_, _, port), _n in held.items():
            assert port in (8080, 9100) or 30000 <= port < 30000 + width
            assert port != 9000


def test_a_port_is_given_once_per_node_whatever_the_address() -> None:
    # Loopback as an agent fingerprints it: 127.0.0.1 and ::1, both on the default network.
    h = Harness()
    node = net_node("n1", ip="127.0.0.1")
    node.node_resources.node_networks[0].addresses.append(NodeNetworkAddress(alias="default", address="::1"))
    h.state.upsert_node(node)
    res = run(h, ports_job(count=2, static={"admin": 9900}))
    assert [a.allocated_resources.shared.ports[0].host_ip for a in live(h) if a.allocated_resources] == [
        "127.0.0.1"
    ]
    assert res.eval.failed_tg_allocs["g"].dimension_exhausted == {
        "network: reserved port collision admin=9900": 1
    }
