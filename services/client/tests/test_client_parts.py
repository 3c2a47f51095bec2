"""The agent's parts on their own: configuration, drivers (a real process for raw_exec), the
executor's exit file and re-attaching to a task after an agent restart."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest

from drover.client.agent import Agent
from drover.client.config import load
from drover.client.drivers import MockDriver, RawExecDriver, StartError
from drover.client.health import HealthTracker
from drover.client.service import parse
from drover.model.alloc import TaskState
from drover.model.durations import SECOND as S
from drover.model.job import LogConfig, Task


def test_config_file_in_nomads_client_layout_and_flags_over_it(tmp_path: Path) -> None:
    f = tmp_path / "agent.hcl"
    f.write_text(
        """
        datacenter = "east"
        name = "n1"
        client {
          node_class = "gpu"
          meta { rack = "r7" }
          reserved { cpu = 500
                     memory = 256 }
        }
        plugin "raw_exec" {
          config { enabled = true }
        }
        """
    )
    cfg = parse(["--config", str(f), "--name", "override", "--meta", "zone=a"])
    assert (cfg.datacenter, cfg.name, cfg.node_class) == ("east", "override", "gpu")
    assert cfg.meta == {"rack": "r7", "zone": "a"}
    assert (cfg.reserved_cpu, cfg.reserved_memory) == (500, 256)
    assert cfg.drivers == {"mock", "raw_exec", "docker"}
    assert parse([]).drivers == {"mock", "docker"}  # raw_exec is off unless enabled; docker on, as in Nomad


def test_bad_config_is_refused_with_every_reason(tmp_path: Path) -> None:
    f = tmp_path / "agent.hcl"
    f.write_text('client { reserved { cpu = -1 } }\nplugin "exec" { config { enabled = true } }\n')
    with pytest.raises(ValueError) as e:
        load(f)
    assert "reserved.cpu" in str(e.value) and 'plugin "exec"' in str(e.value)
    f.write_text("client {\n  meta { rack = 1 + }\n}\n")
    with pytest.raises(ValueError) as e:
        load(f)
    assert str(e.value).startswith(f"{f}:2: syntax: ")
    f.write_text('plugin { config { enabled = "yes" } }\nclient {}\nclient {}\n')
    with pytest.raises(ValueError) as e:
        load(f)
    assert "plugin block is labelled with its driver" in str(e.value)
    assert "client: must be one block" in str(e.value)


async def test_mock_driver_runs_for_then_exits_with_its_code() -> None:
    h = await MockDriver().start(
        Task(name="t", driver="mock", config={"run_for": "50ms", "exit_code": 3}), Path(), Path(), {}
    )
    assert (await h.wait()).exit_code == 3
    with pytest.raises(StartError) as e:
        await MockDriver().start(
            Task(name="t", driver="mock", config={"start_error": "boom"}), Path(), Path(), {}
        )
    assert str(e.value) == "boom" and not e.value.recoverable


async def test_mock_kill_after_longer_than_kill_timeout_is_force_killed() -> None:
    h = await MockDriver().start(
        Task(name="t", driver="mock", config={"kill_after": "5s"}), Path(), Path(), {}
    )
    t0 = time.monotonic()
    await h.stop(0.1)
    assert time.monotonic() - t0 < 1 and (await h.wait()).exit_code == 137


async def test_raw_exec_runs_a_real_process_with_env_and_logs(tmp_path: Path) -> None:
    task = Task(
        name="t", driver="raw_exec", config={"command": "/bin/sh", "args": ["-c", "echo $GREETING; exit 4"]}
    )
    h = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {"GREETING": "hi"})
    assert (await h.wait()).exit_code == 4
    assert (tmp_path / "logs" / "t.stdout.0").read_text() == "hi\n"
    assert (tmp_path / "t" / "exit-code").read_text() == "4"


async def test_raw_exec_stop_sends_the_kill_signal_then_kill_after_the_timeout(tmp_path: Path) -> None:
    stubborn = Task(
        name="t",
        driver="raw_exec",
        config={"command": "/bin/sh", "args": ["-c", "trap '' TERM; echo ready; sleep 30"]},
        kill_signal="SIGTERM",
        kill_timeout=S // 2,
    )
    h = await RawExecDriver().start(stubborn, tmp_path / "t", tmp_path / "logs", {})
    await _until_ready(tmp_path / "logs" / "t.stdout.0")
    t0 = time.monotonic()
    await h.stop(0.5)
    took = time.monotonic() - t0
    assert 0.4 < took < 5, took
    assert (await h.wait()).exit_code != 0


async def _until_ready(stdout: Path) -> None:
    """Until the task has set its traps (its executor, a Python process, takes a while to start
    on a busy machine) and said so."""
    for _ in range(200):
        if stdout.exists() and stdout.read_text().startswith("ready"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the task did not start")


@pytest.mark.parametrize(
    ("kill_signal", "trapped"), [("", "INT"), ("SIGTERM", "TERM"), ("hup", "HUP"), ("SIGUSR1", "USR1")]
)
async def test_raw_exec_stops_a_task_with_its_kill_signal_sigint_by_default(
    tmp_path: Path, kill_signal: str, trapped: str
) -> None:
    """The kill signal reaches the task's process alone; what it left running in its group
    is killed once it exits."""
    script = f"trap 'echo got {trapped}; exit 0' {trapped}; echo ready; sleep 30 & wait"
    task = Task(
        name="t",
        driver="raw_exec",
        config={"command": "/bin/sh", "args": ["-c", script]},
        kill_signal=kill_signal,
    )
    h = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})
    await _until_ready(tmp_path / "logs" / "t.stdout.0")
    t0 = time.monotonic()
    await h.stop(5)
    assert time.monotonic() - t0 < 3
    assert (await h.wait()).exit_code == 0
    assert (tmp_path / "logs" / "t.stdout.0").read_text() == f"ready\ngot {trapped}\n"


async def test_an_unknown_kill_signal_is_refused_at_start(tmp_path: Path) -> None:
    task = Task(name="t", driver="raw_exec", config={"command": "/bin/true"}, kill_signal="SIGNOPE")
    with pytest.raises(StartError, match="unknown kill_signal"):
        await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})


async def test_a_task_is_reattached_after_an_agent_restart_and_its_exit_code_read(tmp_path: Path) -> None:
    task = Task(
        name="t", driver="raw_exec", config={"command": "/bin/sh", "args": ["-c", "sleep 0.5; exit 7"]}
    )
    first = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})
    saved = first.state()
    # A new agent knows only what it saved: the executor's pid and exit file.
    again = RawExecDriver.reattach(saved)
    assert (await asyncio.wait_for(again.wait(), 10)).exit_code == 7
    await first.wait()


async def test_a_reattached_task_whose_pid_now_names_another_process_is_neither_taken_nor_signalled(
    tmp_path: Path,
) -> None:
    task = Task(name="t", driver="raw_exec", config={"command": "/bin/sh", "args": ["-c", "exit 3"]})
    first = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})
    await first.wait()
    # The executor is gone and its pid has gone to another process (a group leader, as the
    # PostgreSQL server the tests start is): a saved handle with that pid must not touch it.
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        saved = {**first.state(), "pid": other.pid}
        again = RawExecDriver.reattach(saved)
        assert (await asyncio.wait_for(again.wait(), 5)).exit_code == 3
        again.signal(signal.SIGKILL)
        await again.stop(0.1)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


# --- deployment health (drover.client.health) ---
RUN = TaskState(state="running")
PENDING = TaskState(state="pending")
FAILED = TaskState(state="dead", failed=True)


@pytest.mark.parametrize(
    ("name", "steps", "verdict"),
    [
        # (time in s, states) in order; the verdict after the last step
        ("running for min_healthy_time", [(0, [RUN, RUN]), (10, [RUN, RUN])], True),
        ("not yet", [(0, [RUN]), (9, [RUN])], None),
        ("a task failed", [(0, [RUN, RUN]), (1, [RUN, FAILED])], False),
        ("a restart starts the clock again", [(0, [RUN]), (5, [PENDING]), (6, [RUN]), (15, [RUN])], None),
        ("...and then it is healthy", [(0, [RUN]), (5, [PENDING]), (6, [RUN]), (16, [RUN])], True),
        ("the healthy deadline passed first", [(0, [PENDING]), (300, [PENDING])], False),
        ("healthy just before the deadline", [(0, [PENDING]), (289, [RUN]), (299, [RUN])], True),
    ],
)
def test_alloc_health_from_task_states(
    name: str, steps: list[tuple[int, list[TaskState]]], verdict: bool | None
) -> None:
    tracker = HealthTracker(min_healthy_time=10 * S, deadline=300 * S, healthy_deadline=300 * S)
    result = None
    for at, states in steps:
        result = tracker.update({f"t{i}": s for i, s in enumerate(states)}, at * S)
    assert result is not None and result.healthy is verdict, name
    if verdict is None:
        assert 0 < result.wake_at <= 300 * S  # it says when to look again


def test_unhealthy_reasons_say_why() -> None:
    tracker = HealthTracker(min_healthy_time=10 * S, deadline=60 * S, healthy_deadline=60 * S)
    assert tracker.update({"t": FAILED}, 0).reason == "Unhealthy because of failed task"
    late = tracker.update({"t": PENDING}, 60 * S)
    assert late.reason == "Task not running for min_healthy_time of 10s by healthy_deadline of 60s"


@pytest.mark.parametrize(
    ("name", "steps", "verdict"),
    [
        # (time in s, checks passing) with the task running throughout
        ("checks pass from the start", [(0, True), (10, True)], True),
        ("checks not passing yet", [(0, False), (10, False)], None),
        ("the clock starts when they pass", [(0, False), (5, True), (14, True)], None),
        ("...and then it is healthy", [(0, False), (5, True), (15, True)], True),
        ("a failure starts it again", [(0, True), (5, False), (6, True), (15, True)], None),
        ("checks never passed by the deadline", [(0, False), (300, False)], False),
    ],
)
def test_alloc_health_waits_on_checks(name: str, steps: list[tuple[int, bool]], verdict: bool | None) -> None:
    tracker = HealthTracker(min_healthy_time=10 * S, deadline=300 * S, healthy_deadline=300 * S)
    result = None
    for at, passing in steps:
        result = tracker.update({"t": RUN}, at * S, passing)
    assert result is not None and result.healthy is verdict, name
    if verdict is False:
        assert result.reason == "Services not healthy by deadline"


def test_the_node_id_is_kept_whole_and_an_empty_one_replaced(tmp_path: Path) -> None:
    """The agent's node ID survives a restart; a node-id file left empty (an agent stopped
    while writing it, before writes were atomic) gives a new ID, never an empty one."""
    cfg = parse(["--data-dir", str(tmp_path), "--name", "a1"])
    first = Agent(cfg).node_id
    assert first and (tmp_path / "client" / "node-id").read_text() == first
    assert Agent(cfg).node_id == first
    (tmp_path / "client" / "node-id").write_text("")
    fresh = Agent(cfg).node_id
    assert fresh and fresh != first and (tmp_path / "client" / "node-id").read_text() == fresh
    assert [p.name for p in (tmp_path / "client").iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize(
    ("addr", "ok"),
    [("127.0.0.1:0", True), ("0.0.0.0:4647", True), ("[::1]:4647", True), ("localhost", False),
     (":4647", False), ("h:port", False), ("h:70000", False)],
)  # fmt: skip
def test_the_logs_listener_address_is_host_and_port(addr: str, ok: bool, tmp_path: Path) -> None:
    if ok:
        assert parse(["--http-addr", addr]).http_addr == addr
    else:
        with pytest.raises(SystemExit):
            parse(["--http-addr", addr])
        (f := tmp_path / "agent.hcl").write_text(f'http_addr = "{addr}"\n')
        with pytest.raises(ValueError, match="http_addr: must be HOST:PORT"):
            load(f)


async def test_raw_exec_keeps_no_output_when_the_logs_block_disables_it(tmp_path: Path) -> None:
    task = Task(
        name="t",
        driver="raw_exec",
        config={"command": "/bin/sh", "args": ["-c", "echo hi; echo there >&2"]},
        log_config=LogConfig(disabled=True),
    )
    h = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})
    assert (await h.wait()).exit_code == 0
    assert list((tmp_path / "logs").iterdir()) == []


async def test_raw_exec_says_why_a_command_did_not_start_in_its_stderr_log(tmp_path: Path) -> None:
    task = Task(name="t", driver="raw_exec", config={"command": str(tmp_path / "missing")})
    h = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})
    assert (await h.wait()).exit_code == 127
    assert "failed to start" in (tmp_path / "logs" / "t.stderr.0").read_text()
    assert (tmp_path / "logs" / "t.stdout.0").read_bytes() == b""


async def test_raw_exec_sends_a_signal_to_the_task_and_it_runs_on(tmp_path: Path) -> None:
    """A signal (a template's change_signal) reaches the task's processes, not its executor:
    the task handles it and keeps running."""
    script = "trap 'echo got HUP' HUP; echo ready; while :; do sleep 0.1; done"
    task = Task(name="t", driver="raw_exec", config={"command": "/bin/sh", "args": ["-c", script]})
    # Started as an agent under nohup starts it, SIGHUP ignored: the task still traps it.
    ignored = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        h = await RawExecDriver().start(task, tmp_path / "t", tmp_path / "logs", {})
    finally:
        signal.signal(signal.SIGHUP, ignored)
    await _until_ready(tmp_path / "logs" / "t.stdout.0")
    await h.send("SIGHUP")
    out = tmp_path / "logs" / "t.stdout.0"
    for _ in range(100):
        if "got HUP" in out.read_text():
            break
        await asyncio.sleep(0.05)
    assert out.read_text() == "ready\ngot HUP\n"
    waiter = asyncio.ensure_future(h.wait())
    await asyncio.sleep(0.3)
    assert not waiter.done()  # still running
    with pytest.raises(StartError, match="unknown kill_signal"):
        await h.send("SIGNOPE")
    await h.stop(1.0)
    await waiter
