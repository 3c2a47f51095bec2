"""An alloc runner on its own, in process, with the real mock and raw_exec drivers: lifecycle
order, kills (a failed sibling, a dead leader, sidecars outliving the main tasks), shutdown
delays, and the prestart hooks (environment, host volumes, artifacts) reaching a real process."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from drover.client.runner import AllocRunner, ClientContext
from drover.model.alloc import Allocation, TaskState
from drover.model.canonicalize import canonicalize
from drover.model.durations import SECOND as S
from drover.model.job import Job, RestartPolicy, Task, TaskArtifact, TaskGroup, TaskLifecycle
from drover.model.node import Node
from drover.model.volumes import ClientHostVolumeConfig, VolumeMount, VolumeRequest

NO_RESTARTS = RestartPolicy(attempts=0, interval=60 * S, delay=0, mode="fail")


def mock(name: str, hook: str = "", sidecar: bool = False, **config: Any) -> Task:
    return Task(
        name=name,
        driver="mock",
        config=config,
        lifecycle=TaskLifecycle(hook=hook, sidecar=sidecar) if hook else None,
        kill_timeout=S,
    )


def runner(
    tmp_path: Path, tasks: list[Task], job_type: str = "batch", node: Node | None = None, **group: Any
) -> AllocRunner:
    job = canonicalize(
        Job(
            id="j",
            type=job_type,
            task_groups=[TaskGroup(name="g", tasks=tasks, restart_policy=NO_RESTARTS, **group)],
        )
    )
    alloc = Allocation(id="3b5c9e2a-0000-4000-8000-000000000001", name="j.g[0]", job_id="j", task_group="g")
    ctx = ClientContext(
        data_dir=tmp_path, drivers={"mock", "raw_exec"}, node=node or Node(id="n1", name="n1")
    )
    return AllocRunner(alloc, job, ctx, lambda _: None, lambda: None)


async def run(r: AllocRunner, timeout: float = 10) -> None:
    r.start()
    assert r.main is not None
    await asyncio.wait_for(r.main, timeout)


def started(s: TaskState) -> int:
    return next(e.time for e in s.events if e.type == "Started")


def kinds(s: TaskState) -> list[str]:
    return [e.type for e in s.events]


async def test_tasks_start_and_stop_in_lifecycle_order(tmp_path: Path) -> None:
    r = runner(
        tmp_path,
        [
            mock("post", "poststop", run_for="50ms"),
            mock("warm", "poststart", run_for="50ms"),
            mock("main", run_for="400ms"),
            mock("proxy", "prestart", sidecar=True),  # runs until the main tasks are dead
            mock("init", "prestart", run_for="200ms"),
        ],
    )
    await run(r)
    s = {n: tr.state for n, tr in r.tasks.items()}
    assert started(s["init"]) <= started(s["proxy"]) + S // 10 < started(s["main"])
    assert s["init"].finished_at <= started(s["main"])  # main waits for the prestart task
    assert started(s["main"]) <= started(s["warm"])  # poststart once main runs
    last = max(s[n].finished_at for n in ("init", "proxy", "main", "warm"))
    assert last <= started(s["post"])  # poststop once everything else is dead
    assert "Main Tasks Dead" in kinds(s["proxy"]) and kinds(s["proxy"])[-1] == "Killed"
    assert r.client_status() == "complete" and not any(st.failed for st in s.values())


async def test_a_failed_prestart_task_kills_the_main_tasks_before_they_start(tmp_path: Path) -> None:
    r = runner(
        tmp_path,
        [
            mock("init", "prestart", run_for="50ms", exit_code=3),
            mock("main"),
            mock("post", "poststop", run_for="10ms"),
        ],
    )
    await run(r)
    s = {n: tr.state for n, tr in r.tasks.items()}
    assert s["init"].failed and "Started" not in kinds(s["main"])
    assert kinds(s["main"])[-2:] == ["Sibling Task Failed", "Killed"]
    assert s["main"].events[-2].details == {"failed_sibling": "init"}
    assert s["main"].events[-2].display_message == 'Task\'s sibling "init" failed'
    assert "Started" in kinds(s["post"])  # the poststop task still runs
    assert r.client_status() == "failed"


async def test_when_the_leader_ends_the_others_are_killed(tmp_path: Path) -> None:
    boss = mock("boss", run_for="100ms")
    boss.leader = True
    r = runner(tmp_path, [mock("worker"), boss], job_type="batch")
    await run(r)
    worker = r.tasks["worker"].state
    assert "Leader Task Dead" in kinds(worker) and kinds(worker)[-1] == "Killed"
    assert r.client_status() == "complete"


async def test_a_service_alloc_is_running_while_its_poststop_task_waits(tmp_path: Path) -> None:
    r = runner(tmp_path, [mock("main"), mock("post", "poststop", run_for="10ms")], job_type="service")
    r.start()
    for _ in range(100):
        if r.tasks["main"].state.state == "running":
            break
        await asyncio.sleep(0.02)
    assert r.client_status() == "running" and r.tasks["post"].state.state == "pending"
    await asyncio.wait_for(r.stop(), 10)
    assert r.tasks["post"].state.state == "dead" and "Started" in kinds(r.tasks["post"].state)
    assert r.client_status() == "complete"


async def test_shutdown_delays_before_the_kill_and_skipping_them(tmp_path: Path) -> None:
    slow = mock("main")
    slow.shutdown_delay = S // 2
    for skip in (False, True):
        r = runner(tmp_path / str(skip), [slow.model_copy()], job_type="service", shutdown_delay=S // 2)
        r.start()
        await asyncio.sleep(0.2)
        t0 = time.monotonic()
        await asyncio.wait_for(r.stop(no_shutdown_delay=skip), 10)
        took = time.monotonic() - t0
        events = kinds(r.tasks["main"].state)
        if skip:
            assert took < 0.4 and "Skipping shutdown delay" in events, (took, events)
        else:
            # the group's delay, then the task's
            assert took >= 0.95 and "Waiting for shutdown delay" in events, (took, events)
        assert events[-2:] == ["Killing", "Killed"]


async def test_the_environment_volumes_and_artifacts_reach_a_real_process(tmp_path: Path) -> None:
    (volume := tmp_path / "vol").mkdir()
    (source := tmp_path / "conf.txt").write_text("conf")
    out = tmp_path / "env.out"
    task = Task(
        name="t",
        driver="raw_exec",
        config={"command": "/bin/sh", "args": ["-c", f"env > {out}; echo ${{NOMAD_ALLOC_ID}} > {out}.arg"]},
        env={"WHERE": "${attr.kernel.name}:${NOMAD_DC}"},
        meta={"tier": "web"},
        volume_mounts=[VolumeMount(volume="data", destination="/data")],
        artifacts=[TaskArtifact(getter_source=str(source))],
    )
    node = Node(
        id="n1",
        datacenter="dc7",
        attributes={"kernel.name": "linux"},
        host_volumes={"shared": ClientHostVolumeConfig(name="shared", path=str(volume))},
    )
    r = runner(tmp_path, [task], node=node, volumes={"data": VolumeRequest(type="host", source="shared")})
    await run(r)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    alloc_dir = tmp_path / "allocs" / r.alloc.id
    assert env["NOMAD_TASK_DIR"] == str(alloc_dir / "t/local") and env["NOMAD_ALLOC_DIR"] == str(
        alloc_dir / "alloc"
    )
    assert env["NOMAD_SECRETS_DIR"] == str(alloc_dir / "t/secrets")
    assert env["NOMAD_JOB_ID"] == "j" and env["NOMAD_DC"] == "dc7" and env["NOMAD_META_TIER"] == "web"
    assert env["WHERE"] == "linux:dc7" and env["DROVER_VOLUME_data"] == str(volume)
    assert (tmp_path / "env.out.arg").read_text().strip() == r.alloc.id  # the config interpolated
    assert (alloc_dir / "t/local/conf.txt").read_text() == "conf"
    assert kinds(r.tasks["t"].state)[:4] == ["Received", "Task Setup", "Downloading Artifacts", "Started"]


async def test_an_artifact_that_cannot_be_fetched_fails_the_task_per_its_restart_policy(
    tmp_path: Path,
) -> None:
    task = Task(name="t", driver="mock", artifacts=[TaskArtifact(getter_source=str(tmp_path / "missing"))])
    task.restart_policy = RestartPolicy(attempts=1, interval=60 * S, delay=S // 20, mode="fail")
    r = runner(tmp_path, [task])
    await run(r)
    s = r.tasks["t"].state
    failures = [e for e in s.events if e.type == "Failed Artifact Download"]
    assert len(failures) == 2 and s.restarts == 1 and s.failed  # tried again once, then failed
    assert failures[0].display_message.startswith(f'failed to download artifact "{tmp_path / "missing"}": ')
    assert kinds(s)[-1] == "Not Restarting"


async def test_a_host_volume_the_node_lacks_fails_the_task_at_setup(tmp_path: Path) -> None:
    task = mock("t", run_for="10ms")
    task.volume_mounts = [VolumeMount(volume="data", destination="/data")]
    r = runner(tmp_path, [task], volumes={"data": VolumeRequest(type="host", source="nope")})
    await run(r)
    s = r.tasks["t"].state
    assert s.failed and "Setup Failure" in kinds(s) and kinds(s)[-1] == "Not Restarting"
    assert "missing host volume nope" in next(e.message for e in s.events if e.type == "Setup Failure")
