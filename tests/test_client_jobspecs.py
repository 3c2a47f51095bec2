"""Jobs as real jobspecs write them, end to end: every service as its own process and one real
agent (raw_exec enabled, network_interface "lo", a host volume) running real commands - tasks in
Nomad's lifecycle order, artifacts from an HTTP server, the NOMAD_* environment, a task's own
restart block, and a task serving HTTP on the port the scheduler gave it. One cluster and one
agent for the module."""

from __future__ import annotations

import hashlib
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .test_client import ENV, Agents, allocs

# Seconds an alloc has to be placed and run to its end on a loaded host.
RUN = 60


@pytest.fixture(scope="module")
def setup(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, Path]]:
    """Every service, and one agent whose config names the network interface and a host volume."""
    tmp = tmp_path_factory.mktemp("jobspecs")
    (tmp / "volume").mkdir()
    (config := tmp / "agent.hcl").write_text(
        f"""
        client {{
          network_interface = "lo"
          host_volume "data" {{ path = "{tmp / "volume"}" }}
        }}
        plugin "raw_exec" {{ config {{ enabled = true }} }}
        """
    )
    # TTLs of 10-20 s: a busy host must not miss the agent's node mid-test (its allocs lost).
    c = Cluster(module_database_url, nats_url, tmp, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"}).start()
    agents = Agents(c, tmp)
    try:
        agents.start_ready("a1", "--config", str(config))
        yield c, tmp
    finally:
        agents.close()
        c.stop()


def sh(script: str, **task: Any) -> dict[str, Any]:
    return {
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "Resources": {"CPU": 100, "MemoryMB": 32},
        "KillTimeout": 2 * S,
        **task,
    }


def job(
    job_id: str, tasks: dict[str, dict[str, Any]], job_type: str = "batch", **group: Any
) -> dict[str, Any]:
    return {
        "Job": {
            "ID": job_id,
            "Type": job_type,
            "Datacenters": ["dc1"],
            "TaskGroups": [
                {
                    "Name": "g",
                    "Tasks": [{"Name": name, **t} for name, t in tasks.items()],
                    "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
                    "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
                    **group,
                }
            ],
        }
    }


def ended(c: Cluster, job_id: str) -> dict[str, Any]:
    """The job's one alloc once its client status is terminal."""
    return c.wait(
        lambda: next((a for a in allocs(c, job_id) if a["ClientStatus"] in ("complete", "failed")), None),
        RUN,
        describe=lambda: allocs(c, job_id),
    )


def stamp(out: Path, name: str, what: str) -> str:
    return f"date +%s%N > {out}/{name}.{what}"


def test_tasks_run_in_nomads_lifecycle_order(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    out = tmp / "order"
    out.mkdir()

    def timed(name: str, body: str) -> str:
        return f"{stamp(out, name, 'start')}; {body}; {stamp(out, name, 'end')}"

    sidecar = f"{stamp(out, 'proxy', 'start')}; trap '{stamp(out, 'proxy', 'end')}; exit 0' INT; while :; do sleep 0.1; done"
    c.put(
        "/v1/jobs",
        job(
            "lifecycle",
            {
                "clean": sh(timed("clean", "true"), Lifecycle={"Hook": "poststop"}),
                "warm": sh(timed("warm", "sleep 0.3"), Lifecycle={"Hook": "poststart"}),
                "main": sh(timed("main", "sleep 2")),
                "proxy": sh(sidecar, Lifecycle={"Hook": "prestart", "Sidecar": True}),
                "init": sh(timed("init", "sleep 1"), Lifecycle={"Hook": "prestart"}),
            },
        ),
    )
    alloc = ended(c, "lifecycle")
    assert alloc["ClientStatus"] == "complete", alloc["TaskStates"]

    def t(name: str, what: str) -> int:
        return int((out / f"{name}.{what}").read_text())

    assert t("init", "end") <= t("main", "start")  # main waits for the prestart task to succeed
    assert t("proxy", "start") < t("main", "start")  # the prestart sidecar starts before main...
    assert t("main", "end") <= t("proxy", "end")  # ...and runs until main is done
    # Poststart once main runs: after the agent started main's process (main's own first line
    # may run a moment later than warm's).
    main_started = next(e["Time"] for e in alloc["TaskStates"]["main"]["Events"] if e["Type"] == "Started")
    assert main_started <= t("warm", "start")
    assert max(t(n, "end") for n in ("init", "proxy", "main", "warm")) <= t("clean", "start")  # poststop last
    proxy = [e["Type"] for e in alloc["TaskStates"]["proxy"]["Events"]]
    assert "Main Tasks Dead" in proxy and proxy[-1] == "Killed"
    assert all(not s["Failed"] for s in alloc["TaskStates"].values())


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An HTTP server on a free port of 127.0.0.1, serving a directory."""
    root = tmp_path_factory.mktemp("www")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *_: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def test_artifacts_are_fetched_unpacked_and_checked(
    setup: tuple[Cluster, Path], web: tuple[str, Path]
) -> None:
    c, tmp = setup
    base, root = web
    (root / "hello.txt").write_bytes(b"hello")
    with tarfile.open(root / "bundle.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("conf/app.conf")
        info.size = 6
        tf.addfile(info, io.BytesIO(b"port=1"))
    out = tmp / "artifacts.out"
    good = hashlib.sha256(b"hello").hexdigest()
    task = sh(
        f"cat local/hello.txt local/conf/app.conf > {out}",
        Artifacts=[
            {"GetterSource": f"{base}/hello.txt", "GetterOptions": {"checksum": f"sha256:{good}"}},
            {"GetterSource": f"{base}/bundle.tar.gz"},
        ],
    )
    c.put("/v1/jobs", job("fetcher", {"t": task}))
    alloc = ended(c, "fetcher")
    assert alloc["ClientStatus"] == "complete", alloc["TaskStates"]
    assert out.read_text() == "helloport=1"  # the file in local/, the archive unpacked there
    events = [e["Type"] for e in alloc["TaskStates"]["t"]["Events"]]
    assert events.index("Downloading Artifacts") < events.index("Started")

    bad = sh(
        "true",
        Artifacts=[
            {"GetterSource": f"{base}/hello.txt", "GetterOptions": {"checksum": "sha256:" + "0" * 64}}
        ],
    )
    c.put("/v1/jobs", job("bad-fetch", {"t": bad}))
    alloc = ended(c, "bad-fetch")
    state = alloc["TaskStates"]["t"]
    assert alloc["ClientStatus"] == "failed" and state["Failed"]
    failure = next(e for e in state["Events"] if e["Type"] == "Failed Artifact Download")
    assert failure["DisplayMessage"].startswith(
        f'failed to download artifact "{base}/hello.txt": checksums did not match'
    )
    assert [e["Type"] for e in state["Events"]][
        -1
    ] == "Not Restarting"  # the restart policy applied (0 attempts)
    assert "Started" not in [e["Type"] for e in state["Events"]]


def test_nomad_variables_and_host_volumes_reach_a_raw_exec_task(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    out = tmp / "env.out"
    task = sh(
        f"env > {out}",
        Env={"WHO": "${node.unique.name}/${NOMAD_GROUP_NAME}", "RACKLESS": "${meta.rack}"},
        Meta={"owner": "team-a"},
        VolumeMounts=[{"Volume": "data", "Destination": "/data", "ReadOnly": True}],
    )
    c.put(
        "/v1/jobs",
        job("envy", {"t": task}, Meta={"tier": "web"}, Volumes={"data": {"Type": "host", "Source": "data"}}),
    )
    alloc = ended(c, "envy")
    assert alloc["ClientStatus"] == "complete", alloc["TaskStates"]
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    alloc_dir = tmp / "a1" / "allocs" / alloc["ID"]
    assert {k: env.get(k) for k in (
        "NOMAD_ALLOC_ID", "NOMAD_SHORT_ALLOC_ID", "NOMAD_ALLOC_NAME", "NOMAD_ALLOC_INDEX", "NOMAD_GROUP_NAME",
        "NOMAD_JOB_ID", "NOMAD_JOB_NAME", "NOMAD_TASK_NAME", "NOMAD_NAMESPACE", "NOMAD_REGION", "NOMAD_DC",
        "NOMAD_CPU_LIMIT", "NOMAD_MEMORY_LIMIT", "NOMAD_ALLOC_DIR", "NOMAD_TASK_DIR", "NOMAD_SECRETS_DIR",
        "NOMAD_META_owner", "NOMAD_META_OWNER", "NOMAD_META_tier", "WHO", "RACKLESS", "DROVER_VOLUME_data",
    )} == {
        "NOMAD_ALLOC_ID": alloc["ID"], "NOMAD_SHORT_ALLOC_ID": alloc["ID"][:8], "NOMAD_ALLOC_NAME": "envy.g[0]",
        "NOMAD_ALLOC_INDEX": "0", "NOMAD_GROUP_NAME": "g", "NOMAD_JOB_ID": "envy", "NOMAD_JOB_NAME": "envy",
        "NOMAD_TASK_NAME": "t", "NOMAD_NAMESPACE": "default", "NOMAD_REGION": "global", "NOMAD_DC": "dc1",
        "NOMAD_CPU_LIMIT": "100", "NOMAD_MEMORY_LIMIT": "32", "NOMAD_ALLOC_DIR": str(alloc_dir / "alloc"),
        "NOMAD_TASK_DIR": str(alloc_dir / "t" / "local"), "NOMAD_SECRETS_DIR": str(alloc_dir / "t" / "secrets"),
        "NOMAD_META_owner": "team-a", "NOMAD_META_OWNER": "team-a", "NOMAD_META_tier": "web",
        "WHO": "a1/g", "RACKLESS": "${meta.rack}", "DROVER_VOLUME_data": str(tmp / "volume"),
    }  # fmt: skip


def test_a_tasks_restart_block_overrides_its_groups(setup: tuple[Cluster, Path]) -> None:
    c, _ = setup
    # The group allows no restarts (job()); the task's own block allows two.
    task = sh("exit 1", RestartPolicy={"Attempts": 2, "Interval": 600 * S, "Delay": S // 5, "Mode": "fail"})
    c.put("/v1/jobs", job("stubborn", {"t": task}))
    alloc = ended(c, "stubborn")
    state = alloc["TaskStates"]["t"]
    assert alloc["ClientStatus"] == "failed" and state["Restarts"] == 2
    kinds = [e["Type"] for e in state["Events"]]
    assert kinds.count("Restarting") == 2 and kinds[-1] == "Not Restarting"


def test_a_task_serves_http_on_the_port_it_was_given(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    out = tmp / "ports.env"
    task = sh(
        f'env > {out}.part; mv {out}.part {out}; exec python3 -m http.server "$NOMAD_PORT_http" --bind "$NOMAD_IP_http" --directory local'
    )
    c.put(
        "/v1/jobs",
        job(
            "web",
            {"t": task},
            job_type="service",
            Networks=[{"DynamicPorts": [{"Label": "http"}]}],
            Update={"MaxParallel": 0},
        ),
    )
    alloc = c.wait(lambda: next((a for a in allocs(c, "web") if a["ClientStatus"] == "running"), None), RUN)
    (port,) = alloc["AllocatedResources"]["Shared"]["Ports"]
    assert port["Label"] == "http" and port["HostIP"] == "127.0.0.1" and 20000 <= port["Value"] <= 32000
    c.wait(out.exists, RUN)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["NOMAD_PORT_http"] == env["NOMAD_HOST_PORT_http"] == str(port["Value"])
    assert env["NOMAD_ADDR_http"] == f"127.0.0.1:{port['Value']}" == env["NOMAD_HOST_ADDR_http"]

    def answers() -> bool:
        try:
            return httpx.get(f"http://{env['NOMAD_ADDR_http']}/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    c.wait(answers, RUN)
    c.http.delete("/v1/job/web")


@pytest.fixture
def second_agent(setup: tuple[Cluster, Path]) -> Iterator[str]:
    """A second real agent, as the first configured; ineligible before it goes, so that no later
    test's alloc lands on its node."""
    c, tmp = setup
    agents = Agents(c, tmp)
    node_id = ""
    try:
        node_id = agents.start_ready("a2", "--config", str(tmp / "agent.hcl"))
        yield node_id
    finally:
        if node_id:
            c.put(f"/v1/node/{node_id}/eligibility", {"Eligibility": "ineligible"})
        agents.close()


def test_a_static_port_runs_once_per_real_node_and_the_third_alloc_is_blocked(
    setup: tuple[Cluster, Path], second_agent: str
) -> None:
    c, tmp = setup
    out = tmp / "static"
    out.mkdir()
    task = sh(f'echo "$NOMAD_ADDR_admin" > {out}/$NOMAD_ALLOC_ID; exec sleep 300')
    body = job("static", {"t": task}, job_type="service", Count=3, Update={"MaxParallel": 0},
               Networks=[{"ReservedPorts": [{"Label": "admin", "Value": 9900}]}])  # fmt: skip
    c.put("/v1/jobs", body)

    def two_running() -> list[dict[str, Any]] | None:
        running = [a for a in allocs(c, "static") if a["ClientStatus"] == "running"]
        return running if len(running) == 2 else None

    running = c.wait(two_running, RUN, describe=lambda: allocs(c, "static"))
    assert len({a["NodeID"] for a in running}) == 2
    for a in running:
        c.wait((out / a["ID"]).exists, RUN)
        assert (out / a["ID"]).read_text().strip() == "127.0.0.1:9900"

    def failed_metric() -> dict[str, Any] | None:
        evals = c.get("/v1/job/static/evaluations")
        if not any(e["Status"] == "blocked" for e in evals):
            return None
        return next((e["FailedTGAllocs"]["g"] for e in evals if e.get("FailedTGAllocs")), None)

    metric = c.wait(failed_metric, RUN)
    assert metric["DimensionExhausted"] == {"network: reserved port collision admin=9900": 2}
    assert len(allocs(c, "static")) == 2
    c.http.delete("/v1/job/static")


def test_the_nomad_apm_reads_an_allocs_resource_usage(setup: tuple[Cluster, Path]) -> None:
    """What the Nomad Autoscaler's nomad APM reads for a task group query: the job's running
    allocs, then each one's /v1/client/allocation/:id/stats (python-nomad's call): a task in a
    busy loop uses up to a core, and the memory its process group holds."""
    import nomad  # type: ignore[import-untyped]

    c, _ = setup
    busy = sh("while :; do :; done", Resources={"CPU": 500, "MemoryMB": 32})
    c.put("/v1/jobs", job("busy", {"t": busy}, job_type="service", Update={"MaxParallel": 0}))
    alloc = c.wait(lambda: next((a for a in allocs(c, "busy") if a["ClientStatus"] == "running"), None), RUN)
    client = nomad.Nomad(address=f"http://127.0.0.1:{c.port}", timeout=30)
    stats = client.client.allocation.read_allocation_stats(alloc["ID"])
    task = stats["Tasks"]["t"]["ResourceUsage"]
    # About a core on an idle host; a loaded CI host (three test workers on two cores) gives
    # the loop much less, but never nothing, and one thread never more than a core.
    assert 10 < task["CpuStats"]["Percent"] < 150, task
    assert task["CpuStats"]["TotalTicks"] > 0 and task["MemoryStats"]["RSS"] > 0
    assert stats["ResourceUsage"]["CpuStats"]["Percent"] == task["CpuStats"]["Percent"]
    assert "Percent" in task["CpuStats"]["Measured"] and task["MemoryStats"]["Measured"] == ["RSS"]
    assert c.http.get("/v1/client/allocation/ffffffff-0000-0000-0000-000000000000/stats").status_code == 404
    c.http.delete("/v1/job/busy").raise_for_status()
