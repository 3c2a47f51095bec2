"""Namespaces in the model: why Nomad refuses to write one, in its words; what a namespace's
Capabilities refuse of a job (Nomad's namespace constraint hook); `default` there without an
event, keeping CreateIndex 1 once written; a deletion leaving it alone."""

from __future__ import annotations

import pytest

from drover.model import Job
from drover.model.events import NamespaceDeleted, NamespaceUpserted
from drover.model.job import Task, TaskGroup
from drover.model.namespace import Namespace, NamespaceCapabilities, job_problems, problems
from drover.model.network import NetworkResource
from drover.model.reducer import apply
from drover.model.state import InMemoryState

NAME_RULE = "Must match regex ^[a-zA-Z0-9-]{1,128}$"


@pytest.mark.parametrize(
    ("ns", "expected"),
    [
        (Namespace(name="prod-1", description="d" * 256, meta={"a": "b"}), []),
        (Namespace(name=""), [f'invalid name "". {NAME_RULE}']),
        (Namespace(name="a.b"), [f'invalid name "a.b". {NAME_RULE}']),
        (Namespace(name="x" * 129), [f'invalid name "{"x" * 129}". {NAME_RULE}']),
        (Namespace(name="a", description="d" * 257), ["description longer than 256"]),
        (Namespace(name="a", quota="q"), ['namespace "a" using non-existent quota "q"']),
        (
            Namespace.model_validate({"Name": "a", "NodePoolConfiguration": {}, "ConsulConfiguration": {}}),
            [
                "invalid node pool configuration: Node Pools Governance is unlicensed.",
                "invalid consul configuration: Multi-Cluster Consul is unlicensed.",
            ],
        ),
    ],
)
def test_a_namespace_s_problems_in_nomad_s_words(ns: Namespace, expected: list[str]) -> None:
    assert problems(ns) == expected


def _job(*drivers: str, modes: tuple[str, ...] = ()) -> Job:
    tasks = [Task(name=f"t{i}", driver=d) for i, d in enumerate(drivers)]
    networks = [NetworkResource(mode=m) for m in modes]
    return Job(id="web", namespace="ns", task_groups=[TaskGroup(name="g", tasks=tasks, networks=networks)])


def _ns(**caps: list[str]) -> Namespace:
    return Namespace(name="ns", capabilities=NamespaceCapabilities(**caps))


@pytest.mark.parametrize(
    ("job", "ns", "expected"),
    [
        (_job("docker"), None, ['job "web" is in nonexistent namespace "ns"']),
        (_job("docker"), Namespace(name="ns"), []),
        (_job("docker", "raw_exec"), _ns(), []),
        (_job("docker"), _ns(enabled_task_drivers=["docker"]), []),
        (_job("exec"), _ns(enabled_task_drivers=["docker"]), ['used task driver "exec" is not allowed in namespace "ns"']),
        (_job("docker"), _ns(disabled_task_drivers=["docker"]), ['used task driver "docker" is not allowed in namespace "ns"']),
        # Disabled wins over enabled.
        (_job("docker"), _ns(enabled_task_drivers=["docker"], disabled_task_drivers=["docker"]),
         ['used task driver "docker" is not allowed in namespace "ns"']),
        (_job("exec", "raw_exec", "docker"), _ns(disabled_task_drivers=["exec", "raw_exec"]),
         ['used task drivers ["exec" "raw_exec"] are not allowed in namespace "ns"']),
        # A network without a mode is in host mode.
        (_job("docker", modes=("",)), _ns(disabled_network_modes=["host"]),
         ['used group network mode "host" is not allowed in namespace "ns"']),
        (_job("docker", modes=("bridge",)), _ns(enabled_network_modes=["bridge"]), []),
        (_job("exec", modes=("host", "cni/x")), _ns(enabled_network_modes=["bridge"], disabled_task_drivers=["exec"]),
         ['used task driver "exec" is not allowed in namespace "ns"',
          'used group network modes ["host" "cni/x"] are not allowed in namespace "ns"']),
    ],
)  # fmt: skip
def test_what_a_namespace_refuses_of_a_job(job: Job, ns: Namespace | None, expected: list[str]) -> None:
    assert job_problems(job, ns) == expected


def test_default_is_there_without_an_event_and_keeps_its_creation() -> None:
    state = InMemoryState()
    default = state.namespace("default")
    assert default is not None and (default.description, default.create_index, default.modify_index) == (
        "Default shared namespace", 1, 1
    )  # fmt: skip
    assert state.namespace("prod") is None and state.namespaces == {}
    apply(state, 7, NamespaceUpserted(namespace=Namespace(name="default", description="shared")))
    apply(state, 8, NamespaceUpserted(namespace=Namespace(name="prod", create_index=99, modify_index=99)))
    apply(state, 9, NamespaceUpserted(namespace=Namespace(name="prod", description="again")))
    written = {n: (ns.description, ns.create_index, ns.modify_index) for n, ns in state.namespaces.items()}
    assert written == {"default": ("shared", 1, 7), "prod": ("again", 8, 9)}
    apply(state, 10, NamespaceDeleted(name="prod"))
    assert state.namespace("prod") is None and list(state.namespaces) == ["default"]
