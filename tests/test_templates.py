"""Templates end to end: every service as its own process and a real agent rendering a task's
`template` blocks from Nomad variables (drover.template through drover.client.tasktemplates):
written before the task starts, the `env` ones in its environment, the task held while a
variable it reads does not exist ("Missing: ..."), and rendered again when the variable
changes, with the template's change_mode applied (restart, signal). One cluster and one agent
for the module."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drover.model.durations import SECOND as S

from .cluster import Cluster
from .test_client import ENV, Agents, allocs

RUN = 60


@pytest.fixture(scope="module")
def setup(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, Path]]:
    tmp = tmp_path_factory.mktemp("templates")
    (config := tmp / "agent.hcl").write_text('plugin "raw_exec" { config { enabled = true } }\n')
    c = Cluster(module_database_url, nats_url, tmp, env={**ENV, "DROVER_HEARTBEAT_MIN_TTL": "10"}).start()
    agents = Agents(c, tmp)
    try:
        agents.start_ready("a1", "--config", str(config))
        yield c, tmp
    finally:
        agents.close()
        c.stop()


def put_var(c: Cluster, path: str, **items: str) -> None:
    r = c.http.put(f"/v1/var/{path}", json={"Path": path, "Items": items})
    assert r.status_code == 200, r.text


def templated_job(job_id: str, script: str, templates: list[dict[str, Any]]) -> dict[str, Any]:
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "Resources": {"CPU": 100, "MemoryMB": 32},
        "KillTimeout": 1 * S,
        "Templates": templates,
    }
    group = {
        "Name": "g",
        "Tasks": [task],
        "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
        "ReschedulePolicy": {"Attempts": 0, "Unlimited": False},
    }
    job = {
        "ID": job_id,
        "Type": "service",
        "Datacenters": ["dc1"],
        "TaskGroups": [group],
        "Update": {"MaxParallel": 0},
    }
    return {"Job": job}


def task_dir(tmp: Path, alloc_id: str) -> Path:
    return tmp / "a1" / "allocs" / alloc_id / "t"


def events(c: Cluster, alloc_id: str) -> list[dict[str, Any]]:
    return c.get(f"/v1/allocation/{alloc_id}")["TaskStates"]["t"]["Events"]


def running(c: Cluster, job_id: str) -> dict[str, Any]:
    return c.wait(
        lambda: next((a for a in allocs(c, job_id) if a["ClientStatus"] == "running"), None),
        RUN,
        describe=lambda: allocs(c, job_id),
    )


def test_a_template_renders_a_variable_and_a_change_restarts_the_task(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    put_var(c, "app/config", db="first", port="5432")
    templates = [
        {
            "EmbeddedTmpl": '{{ with nomadVar "app/config" }}db={{ .db }}:{{ .port }}{{ end }}\n',
            "DestPath": "local/app.conf",
        },
        {
            "EmbeddedTmpl": '{{ with nomadVar "app/config" }}DB_NAME="{{ .db }}"{{ end }}\n',
            "DestPath": "local/app.env",
            "Envvars": True,
        },
    ]
    # The task says what it saw at its start: the file and the variable from the env template.
    script = 'echo "$(cat local/app.conf) env=$DB_NAME" >> ../seen; while :; do sleep 0.1; done'
    c.put("/v1/jobs", templated_job("tmpl", script, templates))
    alloc = running(c, "tmpl")
    seen = task_dir(tmp, alloc["ID"]).parent / "seen"
    c.wait(seen.exists, RUN)
    assert seen.read_text() == "db=first:5432 env=first\n"
    assert (task_dir(tmp, alloc["ID"]) / "local" / "app.conf").stat().st_mode & 0o777 == 0o644

    put_var(c, "app/config", db="second", port="5432")
    c.wait(lambda: seen.read_text().count("\n") >= 2, RUN, describe=lambda: events(c, alloc["ID"]))
    assert seen.read_text() == "db=first:5432 env=first\ndb=second:5432 env=second\n"
    # The restart's events reach the servers with the agent's next report.
    restarted = ("Restart Signaled", "Template with change_mode restart re-rendered")
    c.wait(lambda: restarted in [(e["Type"], e["DisplayMessage"]) for e in events(c, alloc["ID"])], RUN)
    c.http.delete("/v1/job/tmpl").raise_for_status()


def test_a_missing_variable_holds_the_task_until_it_is_written(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    templates = [
        {"EmbeddedTmpl": '{{ with nomadVar "app/later" }}{{ .key }}{{ end }}', "DestPath": "local/later"}
    ]
    c.put(
        "/v1/jobs",
        templated_job("later", "cat local/later > ../seen; while :; do sleep 0.1; done", templates),
    )
    alloc = c.wait(lambda: next(iter(allocs(c, "later")), None), RUN)

    def missing() -> bool:
        return any(
            e["Type"] == "Template"
            and e["DisplayMessage"] == "Missing: nomad.var.block(app/later@default.global)"
            for e in c.get(f"/v1/allocation/{alloc['ID']}")
            .get("TaskStates", {})
            .get("t", {})
            .get("Events", [])
        )

    c.wait(missing, RUN)
    assert c.get(f"/v1/allocation/{alloc['ID']}")["ClientStatus"] == "pending"
    put_var(c, "app/later", key="here")
    running(c, "later")
    seen = task_dir(tmp, alloc["ID"]).parent / "seen"
    c.wait(lambda: seen.exists() and seen.read_text() == "here", RUN)
    c.http.delete("/v1/job/later").raise_for_status()


def test_change_mode_signal_signals_the_task_without_a_restart(setup: tuple[Cluster, Path]) -> None:
    c, tmp = setup
    put_var(c, "app/signal", level="info")
    templates = [
        {
            "EmbeddedTmpl": '{{ with nomadVar "app/signal" }}{{ .level }}{{ end }}',
            "DestPath": "local/level",
            "ChangeMode": "signal",
            "ChangeSignal": "SIGHUP",
        }
    ]
    script = "trap 'cat local/level >> ../seen; echo >> ../seen' HUP; cat local/level > ../seen; echo >> ../seen; while :; do sleep 0.1; done"
    c.put("/v1/jobs", templated_job("sig", script, templates))
    alloc = running(c, "sig")
    seen = task_dir(tmp, alloc["ID"]).parent / "seen"
    c.wait(lambda: seen.exists() and seen.read_text() == "info\n", RUN)
    put_var(c, "app/signal", level="debug")
    c.wait(lambda: seen.read_text() == "info\ndebug\n", RUN, describe=lambda: events(c, alloc["ID"]))

    def signalled() -> bool:
        return any(
            e["Type"] == "Signaling" and e["DisplayMessage"] == "Template re-rendered"
            for e in events(c, alloc["ID"])
        )

    c.wait(signalled, RUN, describe=lambda: events(c, alloc["ID"]))
    got = c.get(f"/v1/allocation/{alloc['ID']}")["TaskStates"]["t"]
    assert got["Restarts"] == 0 and got["State"] == "running"
    c.http.delete("/v1/job/sig").raise_for_status()


def web_job(count: int) -> dict[str, Any]:
    serve = 'exec python3 -m http.server "$NOMAD_PORT_http" --bind "$NOMAD_IP_http"'
    task = {
        "Name": "srv",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", serve]},
        "Resources": {"CPU": 50, "MemoryMB": 32},
        "KillTimeout": 1 * S,
    }
    check = {"Name": "alive", "Type": "http", "Path": "/", "Interval": 1 * S, "Timeout": 1 * S}
    group = {
        "Name": "web",
        "Count": count,
        "Tasks": [task],
        "Networks": [{"DynamicPorts": [{"Label": "http"}]}],
        "Services": [{"Name": "web", "PortLabel": "http", "Provider": "nomad", "Checks": [check]}],
    }
    job = {
        "ID": "web",
        "Type": "service",
        "Datacenters": ["dc1"],
        "TaskGroups": [group],
        "Update": {"MaxParallel": 0},
    }
    return {"Job": job}


def test_a_proxy_template_follows_the_web_services_addresses(setup: tuple[Cluster, Path]) -> None:
    """The issue's proof: a proxy whose template lists `nomadService "web"` holds every web
    alloc's address; web scaled to 3 re-renders it and signals the proxy (change_mode signal);
    web stopped empties it."""
    c, tmp = setup
    c.put("/v1/jobs", web_job(2))
    c.wait(lambda: len(c.get("/v1/service/web")) == 2, RUN, describe=lambda: c.get("/v1/service/web"))
    templates = [
        {
            "EmbeddedTmpl": '{{ range nomadService "web" }}server {{ .Address }}:{{ .Port }}\n{{ end }}',
            "DestPath": "local/upstreams",
            "ChangeMode": "signal",
            "ChangeSignal": "SIGHUP",
            "Splay": 0,
        }
    ]
    script = "trap 'echo reload >> ../seen' HUP; echo start >> ../seen; while :; do sleep 0.1; done"
    c.put("/v1/jobs", templated_job("proxy", script, templates))
    alloc = running(c, "proxy")
    upstreams = task_dir(tmp, alloc["ID"]) / "local" / "upstreams"

    def addresses() -> set[str]:
        return {f"server {r['Address']}:{r['Port']}" for r in c.get("/v1/service/web")}

    c.wait(lambda: upstreams.exists() and set(upstreams.read_text().splitlines()) == addresses(), RUN)
    assert len(upstreams.read_text().splitlines()) == 2

    c.http.post("/v1/job/web/scale", json={"Count": 3, "Target": {"Group": "web"}}).raise_for_status()
    c.wait(lambda: len(c.get("/v1/service/web")) == 3, RUN)
    c.wait(lambda: len(upstreams.read_text().splitlines()) == 3, RUN, describe=lambda: upstreams.read_text())
    assert set(upstreams.read_text().splitlines()) == addresses()
    seen = task_dir(tmp, alloc["ID"]).parent / "seen"
    c.wait(lambda: "reload" in seen.read_text(), RUN)
    assert seen.read_text().count("start") == 1  # signalled, not restarted

    c.http.delete("/v1/job/web").raise_for_status()
    c.wait(lambda: upstreams.read_text() == "", RUN, describe=lambda: upstreams.read_text())
    c.http.delete("/v1/job/proxy").raise_for_status()


def test_once_renders_once_and_wait_holds_a_render_until_the_data_is_quiet(
    setup: tuple[Cluster, Path],
) -> None:
    """Three templates of one variable: `once` keeps its first render, one without `wait`
    follows each change at once, and one with `wait { min = "3s" }` renders only once the
    variable has been left alone for 3 s (consul-template's quiescence). The files are given
    to their uid/gid when the agent runs as root; otherwise a task event says it could not."""
    c, tmp = setup
    put_var(c, "app/quiet", v="1")
    read = '{{ with nomadVar "app/quiet" }}{{ .v }}{{ end }}'
    templates = [
        {"EmbeddedTmpl": read, "DestPath": "local/once", "Once": True, "Uid": 1234, "Gid": 2345},
        {"EmbeddedTmpl": read, "DestPath": "local/now", "ChangeMode": "noop", "Splay": 0},
        {"EmbeddedTmpl": read, "DestPath": "local/waited", "ChangeMode": "noop", "Splay": 0,
         "Wait": {"Min": 3 * S, "Max": 30 * S}},
    ]  # fmt: skip
    c.put("/v1/jobs", templated_job("quiet", "while :; do sleep 0.1; done", templates))
    alloc = running(c, "quiet")
    local = task_dir(tmp, alloc["ID"]) / "local"

    def contents() -> tuple[str, str, str]:
        return tuple((local / name).read_text() for name in ("once", "now", "waited"))  # type: ignore[return-value]

    assert contents() == ("1", "1", "1")
    stat = (local / "once").stat()
    if os.geteuid() == 0:
        assert (stat.st_uid, stat.st_gid) == (1234, 2345)
    else:
        assert (stat.st_uid, stat.st_gid) == (os.geteuid(), os.getegid())
        c.wait(
            lambda: any("kept the agent's owner" in e["DisplayMessage"] for e in events(c, alloc["ID"])), RUN
        )
    assert (local / "now").stat().st_uid == os.geteuid()  # no uid: the agent's
    put_var(c, "app/quiet", v="2")
    c.wait(lambda: contents()[1] == "2", RUN)
    put_var(c, "app/quiet", v="3")
    last = time.monotonic()
    c.wait(lambda: contents()[1] == "3", RUN)
    assert contents()[2] == "1"  # held: the data changed less than 3 s ago
    c.wait(lambda: contents()[2] == "3", RUN)
    assert time.monotonic() - last >= 2.9  # quiet for min after the last change, not the first
    assert contents() == ("1", "3", "3")  # never rendered again
    assert "Restart Signaled" not in {e["Type"] for e in events(c, alloc["ID"])}
    c.http.delete("/v1/job/quiet").raise_for_status()
