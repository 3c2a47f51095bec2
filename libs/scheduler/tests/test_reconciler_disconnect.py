"""Disconnected clients (the `disconnect` block): unknown allocs, their replacements, expiry,
reconnection with the original-vs-replacement choice, and lost allocs whose clients stop them
themselves (stop_on_client_after)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from drover.model import Allocation, AllocState, DesiredTransition, Disconnect, Node
from drover.model.alloc import ALLOC_STATE_FIELD_CLIENT_STATUS
from drover.model.durations import MINUTE, SECOND
from drover.scheduler.harness import Harness
from drover.scheduler.plan import DesiredUpdates
from drover.scheduler.reconciler import (
    ALLOC_LOST,
    ALLOC_NOT_NEEDED,
    ALLOC_RECONNECTED,
    ALLOC_RESCHEDULED,
    ClusterState,
    EvalContext,
    JobState,
    Reconciler,
    ReconcileResults,
    new_uuid_fn,
)

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


# --------------------------------------------------------------------------------------------
# The reconciler alone, as Nomad's disconnected-client table: `count` allocs web.g[i], the
# first `cut` of them on node "cut" with `cut_status` and `cut_states`, each optionally with a
# replacement on another node (failed, and then replaced in turn).
# --------------------------------------------------------------------------------------------

NOW = 1_700_000_000_000_000_000
UNKNOWN_AGO = [AllocState(field=ALLOC_STATE_FIELD_CLIENT_STATUS, value="unknown", time=NOW - 10 * SECOND)]


@dataclass
class Case:
    count: int
    cut: int
    cut_status: str = "running"
    cut_states: list[AllocState] = field(default_factory=lambda: list(UNKNOWN_AGO))
    desired: str = "run"
    node_status: str = "ready"
    disconnect: Disconnect = field(default_factory=lambda: Disconnect(lost_after=5 * MINUTE))
    replacements: bool = False
    fail_replacement: bool = False
    replace_failed_replacement: bool = False
    cut_kw: dict[str, Any] = field(default_factory=dict)
    job_version: int = 0
    kill_timeout: int = 0


@dataclass
class Outcome:
    results: ReconcileResults
    originals: list[Allocation]
    replacements: list[Allocation]

    @property
    def desired(self) -> DesiredUpdates:
        return self.results.desired_tg_updates["g"]

    def stopped(self) -> dict[str, tuple[str, str]]:
        return {s.alloc.id: (s.description, s.client_status) for s in self.results.stop}


def run(case: Case, scores: dict[str, float] | None = None) -> Outcome:
    job = make_job(count=case.count, disconnect=case.disconnect)
    job.version = case.job_version
    if case.kill_timeout:
        job.task_groups[0].tasks[0].kill_timeout = case.kill_timeout
    allocs = []
    for i in range(case.count):
        a = Allocation(
            id=f"a{i}",
            name=f"web.g[{i}]",
            job_id="web",
            task_group="g",
            node_id=f"n{i}",
            desired_status=case.desired,
            client_status="running",
            job_version=case.job_version,
        )
        if i < case.cut:
            a = a.model_copy(
                update={"node_id": "cut", "client_status": case.cut_status, "alloc_states": case.cut_states}
                | case.cut_kw
            )
        allocs.append(a)
    originals = allocs[: case.cut]
    replacements = []
    for i, orig in enumerate(originals):
        if not case.replacements:
            continue
        repl = orig.model_copy(
            update={"id": f"r{i}", "node_id": f"m{i}", "alloc_states": [], "previous_allocation": orig.id}
            | {"job_version": case.job_version, "desired_transition": DesiredTransition()}
        )
        allocs[i] = orig.model_copy(update={"next_allocation": repl.id})
        if case.fail_replacement:
            repl = repl.model_copy(update={"client_status": "failed", "modify_time": NOW - SECOND})
            if case.replace_failed_replacement:
                again = repl.model_copy(
                    update={"id": f"rr{i}", "client_status": "running", "previous_allocation": repl.id}
                )
                repl = repl.model_copy(update={"desired_status": "stop", "next_allocation": again.id})
                allocs.append(again)
                replacements.append(again)
        allocs.append(repl)
        replacements.append(repl)
    cut = Node(id="cut", name="cut", status=case.node_status)
    rec = Reconciler(
        JobState(
            job_id="web",
            namespace="default",
            job=job,
            batch=False,
            deployment=None,
            job_lookup=lambda a: None,
        ),
        ClusterState(allocs=allocs, tainted_nodes={"cut": cut}, placement_scores=scores or {}),
        EvalContext(eval_id="eval-now", eval_priority=50, now=NOW, new_id=new_uuid_fn(1)),
        lambda a, j, tg: (True, False, None),
    )
    return Outcome(rec.compute(), allocs[: case.cut], replacements)


def test_reconnected_without_replacements_they_just_reconnect() -> None:
    out = run(Case(count=2, cut=2))
    assert out.desired == DesiredUpdates(ignore=2, reconnect=2)
    assert not out.results.stop
    for a in out.results.reconnect_updates.values():
        assert a.alloc_states[-1].value == "running" and a.alloc_states[-1].time == NOW


@pytest.mark.parametrize(
    ("reconcile", "keeps"),
    [("keep_original", "original"), ("keep_replacement", "replacement"), ("best_score", "original")],
)
def test_reconnected_with_a_replacement_the_reconcile_option_chooses(reconcile: str, keeps: str) -> None:
    out = run(
        Case(count=3, cut=1, replacements=True, disconnect=Disconnect(lost_after=MINUTE, reconcile=reconcile))
    )
    (orig,), (repl,) = out.originals, out.replacements
    if keeps == "original":
        assert out.stopped() == {repl.id: (ALLOC_RECONNECTED, "")}
        assert out.desired == DesiredUpdates(stop=1, ignore=3, reconnect=1)
    else:
        assert out.stopped() == {orig.id: (ALLOC_NOT_NEEDED, "")}
        assert out.desired == DesiredUpdates(stop=1, ignore=3)
    assert not out.results.place


@pytest.mark.parametrize(
    ("scores", "orig_status", "keeps"),
    [
        ({"a0": 0.4, "r0": 0.8}, "running", "replacement"),
        ({"a0": 0.8, "r0": 0.4}, "running", "original"),
        ({"r0": 0.4}, "running", "replacement"),  # scored over unscored
        ({}, "running", "original"),
    ],
)
def test_best_score_compares_the_placement_scores_handed_in(
    scores: dict[str, float], orig_status: str, keeps: str
) -> None:
    out = run(Case(count=2, cut=1, cut_status=orig_status, replacements=True), scores)
    (orig,), (repl,) = out.originals, out.replacements
    assert set(out.stopped()) == {repl.id if keeps == "original" else orig.id}


def test_an_alloc_that_failed_while_cut_off_is_stopped_as_failed_and_its_replacement_runs() -> None:
    out = run(Case(count=4, cut=2, cut_status="failed", replacements=True))
    assert out.stopped() == {a.id: (ALLOC_RESCHEDULED, "failed") for a in out.originals}
    assert out.desired == DesiredUpdates(stop=2, ignore=4)
    assert not out.results.place


def test_an_alloc_that_failed_while_cut_off_without_a_replacement_gets_one() -> None:
    out = run(Case(count=4, cut=2, cut_status="failed"))
    assert out.stopped() == {a.id: (ALLOC_RESCHEDULED, "failed") for a in out.originals}
    assert sorted(p.name for p in out.results.place) == ["web.g[0]", "web.g[1]"]
    assert out.desired == DesiredUpdates(stop=2, place=2, ignore=2)


def test_failed_originals_stop_and_their_failed_replacements_are_rescheduled_by_their_policy() -> None:
    out = run(Case(count=5, cut=2, cut_status="failed", replacements=True, fail_replacement=True))
    assert out.stopped() == {a.id: (ALLOC_RESCHEDULED, "failed") for a in out.originals}
    # The replacements failed on their own: rescheduled as any failure is, here after the
    # service default's 30 s delay.
    (followup,) = out.results.followup_evals
    assert followup.triggered_by == "alloc-failure" and followup.wait_until > NOW
    assert set(out.results.attribute_updates) == {a.id for a in out.replacements}
    assert not out.results.place


def test_the_second_replacements_of_a_chain_stop_when_the_original_reconnects() -> None:
    out = run(
        Case(
            count=5,
            cut=2,
            replacements=True,
            fail_replacement=True,
            replace_failed_replacement=True,
            disconnect=Disconnect(lost_after=5 * MINUTE, reconcile="keep_original"),
        )
    )
    seconds = {a.id for a in out.replacements if a.id.startswith("rr")}
    assert set(out.stopped()) == seconds
    assert set(out.results.reconnect_updates) == {a.id for a in out.originals}
    assert out.desired.reconnect == 2 and out.desired.stop == 2 and not out.results.place


@pytest.mark.parametrize(
    "case",
    [
        Case(count=2, cut=1, replacements=True, job_version=1, cut_kw={"job_version": 0}),
        Case(
            count=2, cut=1, replacements=True, cut_kw={"desired_transition": DesiredTransition(migrate=True)}
        ),
        Case(
            count=2,
            cut=1,
            replacements=True,
            cut_kw={"desired_transition": DesiredTransition(reschedule=True)},
        ),
    ],
    ids=["older-job-version", "marked-to-migrate", "marked-to-reschedule"],
)
def test_a_reconnecting_alloc_no_longer_wanted_as_it_is_stops_and_its_replacement_stays(case: Case) -> None:
    out = run(case)
    (orig,) = out.originals
    assert out.stopped() == {orig.id: (ALLOC_NOT_NEEDED, "")}
    assert not out.results.reconnect_updates


def test_a_replacement_of_a_newer_job_version_wins_even_against_keep_original() -> None:
    case = Case(
        count=2, cut=1, replacements=True, disconnect=Disconnect(lost_after=MINUTE, reconcile="keep_original")
    )
    out = run(case)
    (repl,) = out.replacements
    assert set(out.stopped()) == {repl.id}
    # The same, the replacement placed with job version 1 while the original ran version 0:
    # the original is of an older version than the job, so it stops whatever the option.
    case.job_version, case.cut_kw = 1, {"job_version": 0}
    out = run(case)
    assert set(out.stopped()) == {out.originals[0].id}


def test_an_original_whose_client_has_not_yet_reported_keeps_waiting_to_reconnect() -> None:
    out = run(
        Case(
            count=2,
            cut=1,
            cut_status="unknown",
            replacements=True,
            disconnect=Disconnect(lost_after=MINUTE, reconcile="keep_original"),
        )
    )
    (repl,) = out.replacements
    assert out.stopped() == {repl.id: (ALLOC_RECONNECTED, "")}
    # Not recorded as reconnected until its client says it runs (the reconnect eval then).
    assert not out.results.reconnect_updates and out.desired.reconnect == 0


def test_a_pending_alloc_on_a_disconnected_node_is_lost_and_not_replaced_twice() -> None:
    out = run(
        Case(
            count=2, cut=1, cut_status="pending", cut_states=[], node_status="disconnected", replacements=True
        )
    )
    (orig,) = out.originals
    assert out.stopped() == {orig.id: (ALLOC_LOST, "lost")}
    assert not out.results.place


def test_allocs_unknown_past_lost_after_are_lost() -> None:
    out = run(
        Case(
            count=5,
            cut=2,
            cut_status="unknown",
            node_status="disconnected",
            replacements=True,
            disconnect=Disconnect(lost_after=2 * SECOND),
        )
    )
    assert out.stopped() == {a.id: (ALLOC_LOST, "lost") for a in out.originals}
    assert not out.results.place  # already replaced


def test_running_allocs_on_a_node_that_just_disconnected_turn_unknown_and_are_replaced() -> None:
    out = run(Case(count=5, cut=2, cut_states=[], node_status="disconnected"))
    assert set(out.results.disconnect_updates) == {"a0", "a1"}
    assert {p.previous.id for p in out.results.place if p.previous} == {"a0", "a1"}
    assert out.desired == DesiredUpdates(place=2, ignore=3, disconnect=2, reschedule_now=2)
    (timeout,) = out.results.followup_evals
    assert timeout.triggered_by == "max-disconnect-timeout" and timeout.wait_until == NOW + 5 * MINUTE


def test_with_replace_false_unknown_allocs_wait_for_lost_after_unreplaced() -> None:
    out = run(
        Case(
            count=3,
            cut=1,
            cut_states=[],
            node_status="disconnected",
            disconnect=Disconnect(lost_after=MINUTE, replace=False),
        )
    )
    assert set(out.results.disconnect_updates) == {"a0"}
    assert not out.results.place
    # lost_after ran out: lost, and (Nomad's way, replace or not) replaced.
    out = run(
        Case(
            count=3,
            cut=1,
            cut_status="unknown",
            node_status="disconnected",
            disconnect=Disconnect(lost_after=5 * SECOND, replace=False),
        )
    )
    assert out.stopped() == {"a0": (ALLOC_LOST, "lost")}
    assert [p.name for p in out.results.place] == ["web.g[0]"]


@pytest.mark.parametrize(
    ("kill_timeout", "waits"), [(0, 5 * SECOND), (2 * SECOND, 5 * SECOND), (9 * SECOND, 9 * SECOND)]
)
def test_with_stop_on_client_after_lost_allocs_are_lost_now_and_replaced_once_their_client_stopped_them(
    kill_timeout: int, waits: int
) -> None:
    case = Case(
        count=3,
        cut=2,
        cut_states=[],
        node_status="down",
        disconnect=Disconnect(stop_on_client_after=30 * SECOND),
        kill_timeout=kill_timeout,
    )
    out = run(case)
    (followup,) = out.results.followup_evals
    assert followup.triggered_by == "alloc-failure" and followup.wait_until == NOW + 30 * SECOND + waits
    # Lost at once, each pointing at the follow-up; nothing placed for the group until then.
    assert out.stopped() == {a.id: (ALLOC_LOST, "lost") for a in out.originals}
    assert {s.followup_eval_id for s in out.results.stop} == {followup.id}
    assert not out.results.place and out.desired.place == 0


def test_stop_on_client_after_through_the_scheduler_replaces_once_the_follow_up_is_due() -> None:
    h = Harness()
    for i in range(3):
        h.state.upsert_node(make_node(f"n{i}"))
    job = make_job(count=2, disconnect=Disconnect(stop_on_client_after=10 * SECOND))
    h.state.upsert_job(job)
    h.process(make_eval(job))
    victim = next(iter(h.state.allocs.values())).node_id
    lost = {a.id for a in h.state.allocs_by_node(victim)}
    h.state.upsert_node(h.state.nodes[victim].model_copy(update={"status": "down"}))
    h.process(make_eval(job, "node-update", node_id=victim))
    assert {h.state.allocs[a].client_status for a in lost} == {"lost"}
    assert len(live(h)) == 2 - len(lost)
    (followup,) = [e for e in h.created_evals if e.triggered_by == "alloc-failure"]
    assert followup.wait_until == h.now + 15 * SECOND  # 10 s, and the default kill timeout
    h.now = followup.wait_until
    h.process(followup)
    assert len(live(h)) == 2
    assert all(a.node_id != victim for a in live(h))
