"""`drover event tail` end to end: the command in a subprocess (its output a pipe) against a real
cluster's /v1/event/stream. It prints a job's register, its evals and its placements (as JSON
and as readable lines), -topic Job:<id> keeps to that job, and -index N resumes from N with
the same events the first run printed from there. One cluster for the module's tests.
(libs/cli/tests/test_event_tail.py covers the lines and the reconnects against canned frames.)"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .cluster import Cluster, job_json, node_json

DROVER = str(Path(sys.executable).parent / "drover")


@pytest.fixture(scope="module")
def cluster(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    c = Cluster(module_database_url, nats_url, tmp_path_factory.mktemp("tail-logs")).start()
    try:
        c.put("/v1/drover/node/register", {"Node": node_json("n1")})
        yield c
    finally:
        c.stop()


class Tail:
    """`drover event tail ...` running, its lines read as they come."""

    def __init__(self, c: Cluster, *args: str) -> None:
        self.cluster = c
        self.proc = subprocess.Popen(
            [DROVER, "event", "tail", "-address", f"http://127.0.0.1:{c.port}", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for text in self.proc.stdout:
            self.lines.append(text.rstrip("\n"))

    def until(self, done: Callable[[list[str]], bool], what: str, timeout: float = 20.0) -> list[str]:
        """Its lines, once `done` holds for them."""
        deadline = time.monotonic() + timeout
        while not done(list(self.lines)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
                raise AssertionError(f"{what}: not seen in {timeout} s; printed {self.lines[-20:]}; {err}")
            time.sleep(0.05)
        return list(self.lines)

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(text) for text in list(self.lines)]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.reader.join(timeout=5)


@pytest.fixture
def tails() -> Iterator[list[Tail]]:
    running: list[Tail] = []
    yield running
    for t in running:
        t.stop()


def of_job(events: list[dict[str, Any]], job: str) -> list[dict[str, Any]]:
    return [e for e in events if e["Key"] == job or job in (e.get("FilterKeys") or [])]


def placed(events: list[dict[str, Any]], job: str) -> bool:
    """The job's register, its eval, and its allocs placed are all there."""
    types = {e["Type"] for e in of_job(events, job)}
    return {"JobRegistered", "EvaluationUpdated"} <= types and bool(
        {"PlanResult", "AllocationUpdated"} & types
    )


def now(c: Cluster) -> int:
    """The log's next position: a tail from there misses nothing that follows (without -index
    it starts wherever the log is once it has connected)."""
    return int(c.http.get("/v1/jobs").headers["X-Nomad-Index"]) + 1


def test_json_lines_show_a_job_registered_and_placed(cluster: Cluster, tails: list[Tail]) -> None:
    tail = Tail(cluster, "-json", "-index", "1")
    tails.append(tail)
    tail.until(lambda lines: bool(lines) and "NodeRegistration" in lines[0], "the node, from the log's start")
    cluster.put("/v1/jobs", job_json("web", 2, cpu=10, mem=10))
    # Placed, and the placements' Allocation events printed too (the plan's result may come first).
    tail.until(
        lambda _: (
            placed(tail.events(), "web")
            and any(e["Topic"] == "Allocation" for e in of_job(tail.events(), "web"))
        ),
        "web registered, evaluated and placed",
    )
    web = of_job(tail.events(), "web")
    job = next(e for e in web if e["Type"] == "JobRegistered")
    assert (job["Topic"], job["Namespace"], job["Payload"]["Job"]["ID"]) == ("Job", "default", "web")
    event = next(e for e in web if e["Type"] == "EvaluationUpdated")
    assert event["Topic"] == "Evaluation" and event["Payload"]["Evaluation"]["JobID"] == "web"
    allocs = [e for e in web if e["Topic"] == "Allocation"]
    assert allocs and all(e["Payload"]["Allocation"]["JobID"] == "web" for e in allocs)
    indexes = [e["Index"] for e in tail.events()]
    assert indexes == sorted(indexes)


def test_readable_lines_and_topic_filters(cluster: Cluster, tails: list[Tail]) -> None:
    start = str(now(cluster))
    # The job's own events; and its evals' and allocs' too (their FilterKeys hold its ID).
    job_only = Tail(cluster, "-json", "-topic", "Job:api", "-index", start)
    readable = Tail(
        cluster, "-topic", "Job:api", "-topic", "Evaluation:api", "-topic", "Allocation:api", "-index", start
    )
    tails += [job_only, readable]
    # Other jobs' events, before and after: none of them is printed.
    for job in ("other", "api", "other-2"):
        cluster.put("/v1/jobs", job_json(job, 1, cpu=10, mem=10))

    def seen(lines: list[str]) -> bool:
        types = [line.split()[2] for line in lines]
        return {"JobRegistered", "EvaluationUpdated"} <= set(types) and bool(
            {"PlanResult", "AllocationUpdated"} & set(types)
        )

    readable.until(seen, "api registered, evaluated and placed")
    # Let the other jobs' placements come by: they are not for these subscribers.
    everything = Tail(cluster, "-json", "-index", start)
    tails.append(everything)
    everything.until(lambda _: placed(everything.events(), "other-2"), "other-2 placed")
    # What the unfiltered stream has of api's up to now: the filtered one prints the same.
    subscribed = ("Job", "Evaluation", "Allocation")
    api = [e for e in of_job(everything.events(), "api") if e["Topic"] in subscribed]
    cutoff = api[-1]["Index"]
    readable.until(lambda lines: int(lines[-1].split()[0]) >= cutoff, f"api's events up to {cutoff}")
    lines = [t for t in readable.lines if int(t.split()[0]) <= cutoff]
    assert [(int(t.split()[0]), t.split()[2]) for t in lines] == [(e["Index"], e["Type"]) for e in api]
    for text in lines:
        _, topic, _, key, *fields = text.split()
        assert topic in ("Job", "Evaluation", "Allocation"), text
        assert key == "api" or "JobID=api" in fields or "Name=api.web[0]" in fields, text
    register = next(text for text in lines if "JobRegistered" in text)
    assert register.split()[1:4] == ["Job", "JobRegistered", "api"]
    assert "Type=service" in register and "Version=0" in register
    job_only.until(lambda lines: bool(lines), "api's job")
    assert {(e["Topic"], e["Key"]) for e in job_only.events()} == {("Job", "api")}


def test_index_resumes_with_the_same_events(cluster: Cluster, tails: list[Tail]) -> None:
    first = Tail(cluster, "-json", "-index", str(now(cluster)))
    tails.append(first)
    cluster.put("/v1/jobs", job_json("db", 3, cpu=10, mem=10))
    first.until(lambda _: placed(first.events(), "db"), "db placed")
    events = first.events()
    start = next(e["Index"] for e in events if e["Key"] == "db" and e["Type"] == "JobRegistered")
    last = events[-1]["Index"]
    again = Tail(cluster, "-json", "-index", str(start))
    tails.append(again)
    again.until(lambda _: bool(again.events()) and again.events()[-1]["Index"] >= last, f"index {last}")
    resumed = [e for e in again.events() if e["Index"] <= last]
    assert resumed[0]["Index"] == start
    assert resumed == [e for e in events if start <= e["Index"] <= last]
