"""Disconnected clients (disconnect.lost_after): unknown allocs, their replacements, expiry and
reconnection with the original-vs-replacement choice."""

from __future__ import annotations

import pytest

from drover.model import Allocation, Disconnect
from drover.model.durations import MINUTE, SECOND
from drover.scheduler.harness import Harness

from .conftest import make_eval, make_job, make_node


def setup(reconcile: str = "best_score", lost_after: int = MINUTE) -> tuple[Harness, str]:
    h = Harness()
    for i in range(4):
        h.state.upsert_node(make_node(f"n{i}"))
    job = make_job(count=2, disconnect=Disconnect(lost_after=lost_after, reconcile=reconcile))
    h.state.upsert_job(job)
    h.process(make_eval(job))
    dep = h.state.latest_deployment("default", "web")
    if dep is not None:
        h.state.upsert_deployment(dep.model_copy(update={"status": "successful"}))
    for a in list(h.state.allocs.values()):
        h.state.upsert_alloc(a.model_copy(update={"client_status": "running"}))
    victim = next(iter(h.state.allocs.values())).node_id
    return h, victim


def disconnect(h: Harness, node_id: str) -> None:
    h.state.upsert_node(h.state.nodes[node_id].model_copy(update={"status": "disconnected"}))
    job = h.state.job("default", "web")
    assert job is not None
    h.process(make_eval(job, "node-update", node_id=node_id))


def live(h: Harness) -> list[Allocation]:
    return [a for a in h.state.allocs.values() if not a.terminal_status()]


def test_disconnect_marks_unknown_and_replaces() -> None:
    h, victim = setup()
    originals = {a.id for a in h.state.allocs_by_node(victim)}
    disconnect(h, victim)
    ann = h.results[-1].plan.annotations["g"]
    assert ann.disconnect == len(originals)
    assert ann.place == len(originals)
    for aid in originals:
        a = h.state.allocs[aid]
        assert a.client_status == "unknown"
        assert a.desired_status == "run"
        assert a.alloc_states[-1].value == "unknown"
    timeouts = [e for e in h.created_evals if e.triggered_by == "max-disconnect-timeout"]
    assert len(timeouts) == 1 and timeouts[0].wait_until == h.now + MINUTE
    replacements = [a for a in live(h) if a.previous_allocation in originals]
    assert len(replacements) == len(originals) and all(a.node_id != victim for a in replacements)


def test_expiry_makes_unknown_allocs_lost_without_a_second_replacement() -> None:
    h, victim = setup()
    originals = {a.id for a in h.state.allocs_by_node(victim)}
    disconnect(h, victim)
    timeout = next(e for e in h.created_evals if e.triggered_by == "max-disconnect-timeout")
    h.now = timeout.wait_until + SECOND
    h.process(timeout)
    for aid in originals:
        assert h.state.allocs[aid].client_status == "lost"
        assert h.state.allocs[aid].desired_status == "stop"
    assert len(live(h)) == 2


@pytest.mark.parametrize(
    ("mode", "keeps_original"),
    [("best_score", True), ("keep_original", True), ("keep_replacement", False)],
)
def test_reconnect_in_time_chooses_per_reconcile_mode(mode: str, keeps_original: bool) -> None:
    h, victim = setup(reconcile=mode)
    originals = {a.id for a in h.state.allocs_by_node(victim)}
    disconnect(h, victim)
    replacements = {a.id for a in live(h) if a.previous_allocation in originals}
    # The node comes back; its client reports the allocs running again.
    h.now += 10 * SECOND
    h.state.upsert_node(h.state.nodes[victim].model_copy(update={"status": "ready"}))
    for aid in originals:
        h.state.upsert_alloc(h.state.allocs[aid].model_copy(update={"client_status": "running"}))
    job = h.state.job("default", "web")
    assert job is not None
    h.process(make_eval(job, "reconnect", node_id=victim))
    live_ids = {a.id for a in live(h)}
    if keeps_original:
        assert originals <= live_ids and not (replacements & live_ids)
        assert h.results[-1].plan.annotations["g"].reconnect == len(originals)
        assert all(not h.state.allocs[a].needs_to_reconnect() for a in originals)
    else:
        assert replacements <= live_ids and not (originals & live_ids)
    assert len(live_ids) == 2


def test_without_lost_after_a_disconnected_node_loses_its_allocs() -> None:
    h, victim = setup(lost_after=0)
    originals = {a.id for a in h.state.allocs_by_node(victim)}
    disconnect(h, victim)
    ann = h.results[-1].plan.annotations["g"]
    assert ann.disconnect == 0
    assert ann.stop == len(originals) and ann.place == len(originals)
    assert {h.state.allocs[a].client_status for a in originals} == {"lost"}
