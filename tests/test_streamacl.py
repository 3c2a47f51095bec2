"""The event stream's ACL rules without servers: what each topic needs (Nomad's validateNsOp),
a `*` subscription bound to the namespaces it was checked in, and a subscription whose check
fails after an ACL change ending before the next frame."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from drover.acl import MANAGEMENT, compile_acl, parse
from drover.api.streamacl import topics_allowed
from drover.api.streamhub import StreamHub, Subscription, frame


def acl_of(rules: str):  # type: ignore[no-untyped-def]
    return compile_acl([parse(rules)])


READER = 'namespace "default" { policy = "read" }'


@pytest.mark.parametrize(
    ("rules", "topics", "namespaces", "allowed"),
    [
        (READER, {"Job": {"*"}}, ["default"], True),
        (READER, {"Allocation": {"web"}, "Evaluation": {"*"}, "Deployment": {"*"}}, ["default"], True),
        (READER, {"Service": {"*"}, "JobRestart": {"*"}}, ["default"], True),
        (READER, {"Job": {"*"}}, ["prod"], False),
        (READER, {"Job": {"*"}}, ["default", "prod"], False),  # `*`: every namespace must pass
        (READER, {"Node": {"*"}}, ["default"], False),
        (READER + '\nnode { policy = "read" }', {"Node": {"*"}, "Job": {"*"}}, ["default"], True),
        (READER, {"*": {"*"}}, ["default"], False),  # every topic: management only
        ('namespace "*" { policy = "read" }', {"Job": {"*"}}, ["default", "prod"], True),
        ('namespace "*" { policy = "read" }\nnamespace "prod" { policy = "deny" }', {"Job": {"*"}},
         ["default", "prod"], False),
        ('namespace "default" { capabilities = ["list-jobs"] }', {"Job": {"*"}}, ["default"], False),
    ],
)  # fmt: skip
def test_what_each_topic_needs(
    rules: str, topics: dict[str, set[str]], namespaces: list[str], allowed: bool
) -> None:
    assert topics_allowed(acl_of(rules), topics, namespaces) is allowed
    assert topics_allowed(MANAGEMENT, topics, namespaces)


def _event(ns: str, key: str) -> tuple[dict[str, Any], bytes]:
    head = {
        "Topic": "Job",
        "Type": "JobRegistered",
        "Key": key,
        "Namespace": ns,
        "FilterKeys": None,
        "Index": 1,
    }
    return head, f'{{"Key":"{key}"}}'.encode()


def test_a_subscription_to_every_namespace_is_bound_to_those_it_was_checked_in() -> None:
    f = frame(1, [_event("default", "a"), _event("prod", "b"), _event("later", "c"), _event("", "node")])
    bound = Subscription({"*": {"*"}}, "*", namespaces=frozenset({"default", "prod"}))
    line = bound.encode(f)
    assert line is not None and b'"c"' not in line and b'"a"' in line and b'"b"' in line and b'"node"' in line
    # An unbound one (a management token's) gets the frame whole.
    assert Subscription({"*": {"*"}}, "*").encode(f) is f.line


async def test_a_subscription_whose_check_fails_after_an_acl_change_ends() -> None:
    hub = StreamHub(SimpleNamespace(), None)  # type: ignore[arg-type]
    hub._replica = SimpleNamespace(position=0)  # type: ignore[assignment]
    verdicts = [True, False]

    async def again() -> bool:
        return verdicts.pop(0)

    sub = Subscription({"*": {"*"}}, "*", authorize=again, acl_version=hub.acl_version)
    runs = hub.frames(sub, 0, heartbeat=5.0)
    hub._replica.position = 1  # type: ignore[union-attr]
    hub.publish(frame(1, [_event("default", "a")]))
    assert [f.index for f in await anext(runs) or []] == [1]  # no ACL change: no check
    hub.acl_version += 1  # a token or policy changed: checked again, still allowed
    hub._replica.position = 2  # type: ignore[union-attr]
    hub.publish(frame(2, [_event("default", "b")]))
    assert [f.index for f in await anext(runs) or []] == [2]
    hub.acl_version += 1  # again: refused now, and nothing more is sent
    hub._replica.position = 3  # type: ignore[union-attr]
    hub.publish(frame(3, [_event("default", "c")]))
    with pytest.raises(StopAsyncIteration):
        await anext(runs)
    assert sub.revoked and verdicts == []
