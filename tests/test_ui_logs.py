"""The console's logs pages against a real agent running raw_exec tasks: the page shows a
log's tail, its stream follows it as it writes, the filter keeps only matching lines (on the
server), Download answers the whole file, a job's merged tail names each alloc and takes in
allocs that start later, and what cannot be shown is said plainly (404 for an unknown alloc, an
unreachable agent's message in the page). The line cutting and filtering itself: table-driven
over drover.api.ui.logtail. One cluster and one agent for the module."""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from collections.abc import Iterator
from html import unescape
from typing import Any

import httpx
import pytest

from drover.api.ui.logtail import CUT, MAX_LINE, Frames, LineFilter, Lines, TooSlow, frame_data

from .cluster import Cluster, node_json
from .test_alloc_logs import end_tasks
from .test_client import AGENT_START, ENV, Agents, service_job

# 3000 numbered lines of 100 bytes (300 KB: more than the page's 64 KiB tail), then a tick a
# line every 0.2 s.
WRITER = (
    "import sys, time\n"
    "for i in range(3000):\n"
    "    print(f'line {i:04d} ' + 'x' * 89, flush=True)\n"
    "print('<b>to stderr</b>', file=sys.stderr, flush=True)\n"
    "for i in range(100000):\n"
    "    print(f'tick {i}', flush=True); time.sleep(0.2)\n"
)
FULL = "".join(f"line {i:04d} " + "x" * 89 + "\n" for i in range(3000))


# ---- the pure parts -------------------------------------------------------------------------


def _frame(data: bytes, end: int) -> bytes:
    return json.dumps({"Data": base64.b64encode(data).decode(), "Offset": end, "File": "f"}).encode() + b"\n"


def test_frames_are_read_from_bytes_cut_anywhere() -> None:
    stream = _frame(b"hello\nwor", 109) + b"{}\n" + _frame(b"ld\n", 112)
    frames, got = Frames(), []
    for i in range(0, len(stream), 7):
        got += frames.feed(stream[i : i + 7])
    assert [frame_data(d) for d in got] == [(b"hello\nwor", 100), (b"", -1), (b"ld\n", 109)]


@pytest.mark.parametrize(
    ("skip", "chunks", "lines", "rest"),
    [
        (False, [(b"a\nb", 0), (b"c\r\nd\n", 3)], ["a", "bc", "d"], []),
        # A tail read from mid-file drops the end of the line whose start it did not read.
        (True, [(b"half\nwhole\n", 10)], ["whole"], []),
        (True, [(b"still half", 10), (b" of it\nnext\nunfinished", 20)], ["next"], ["unfinished"]),
        # From the file's start the first line is whole.
        (True, [(b"first\n", 0)], ["first"], []),
        (False, [(b"\xff\xfeok\n", 0)], ["\ufffd\ufffdok"], []),
        (False, [(b"y" * (MAX_LINE + 5) + b"\n", 0)], ["y" * MAX_LINE + CUT], []),
    ],
)
def test_lines(skip: bool, chunks: list[tuple[bytes, int]], lines: list[str], rest: list[str]) -> None:
    cut, got = Lines(skip_partial=skip), []
    for data, start in chunks:
        got += cut.feed(data, start)
    assert (got, cut.flush()) == (lines, rest)


@pytest.mark.parametrize(
    ("text", "is_regex", "kept"),
    [
        ("", False, ["GET /a 200", "GET /b 500", "POST /c 200"]),
        ("GET", False, ["GET /a 200", "GET /b 500"]),
        ("get", False, []),  # case matters
        (" 5\\d\\d$", True, ["GET /b 500"]),
        ("^(GET|POST) /[ac]", True, ["GET /a 200", "POST /c 200"]),
        ("[", False, []),  # a substring: no pattern meaning
    ],
)
def test_line_filter(text: str, is_regex: bool, kept: list[str]) -> None:
    keep, problem = LineFilter.parse(text, is_regex)
    assert keep is not None and problem == ""
    assert keep(["GET /a 200", "GET /b 500", "POST /c 200"]) == kept


def test_line_filter_refusals_and_a_runaway_pattern() -> None:
    assert (
        LineFilter.parse("(", True)[0] is None
        and "not a regular expression" in LineFilter.parse("(", True)[1]
    )
    assert LineFilter.parse("x" * 600, False)[0] is None
    keep, _ = LineFilter.parse("(a|aa)+$", True)
    assert keep is not None and keep(["aaa"]) == ["aaa"]
    started = time.monotonic()
    with pytest.raises(TooSlow, match="takes too long"):  # catastrophic backtracking, cut off
        keep(["b", "a" * 60 + "!"])
    assert time.monotonic() - started < 2


# ---- against a cluster ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def setup(
    module_database_url: str,
    nats_url: str,
    module_streams_fresh: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    """Every service and one agent with raw_exec, for the module."""
    tmp = tmp_path_factory.mktemp("uilogs")
    c = Cluster(module_database_url, nats_url, tmp, env=ENV).start()
    agents = Agents(c, tmp)
    try:
        agents.start("a1", "--enable-raw-exec")
        node_id = agents.node_id("a1")
        c.wait(
            lambda: [n for n in c.get("/v1/nodes") if n["ID"] == node_id and n["Status"] == "ready"],
            AGENT_START,
        )
        yield c
    finally:
        agents.close()
        end_tasks(tmp / "a1")
        c.stop()


def run_python(c: Cluster, job_id: str, code: str, count: int = 1) -> list[dict[str, Any]]:
    """Register a job whose task "t" runs `code`; its allocs once `count` run."""
    task = {"Driver": "raw_exec", "Config": {"command": sys.executable, "args": ["-c", code]}}
    c.put("/v1/jobs", service_job(job_id, task, count=count))

    def running() -> list[dict[str, Any]] | None:
        found = [a for a in c.get(f"/v1/job/{job_id}/allocations") if a["ClientStatus"] == "running"]
        return found if len(found) >= count else None

    return c.wait(running, timeout=30)


@pytest.fixture(scope="module")
def writer(setup: Cluster) -> dict[str, Any]:
    """One alloc whose task wrote FULL, and ticks on."""
    c = setup
    alloc = run_python(c, "writer", WRITER)[0]

    def written() -> bool:
        r = c.http.get(
            f"/v1/client/fs/logs/{alloc['ID']}", params={"task": "t", "type": "stdout", "plain": "true"}
        )
        return r.status_code == 200 and b"tick 0\n" in r.content

    c.wait(written, timeout=30)
    return alloc


def pre_lines(html: str) -> list[str]:
    """The lines the page's <pre> shows."""
    m = re.search(r'<pre id="log-lines"[^>]*>(.*?)</pre>', html, re.S)
    assert m is not None, html
    return [unescape(s) for s in re.findall(r'<span class="ln">(.*?)\n</span>', m.group(1), re.S)]


def events(
    c: Cluster, url: str, params: dict[str, str], until: Any, timeout: float = 20
) -> list[tuple[str, Any]]:
    """The server-sent events of `url` until `until(events)` holds, or the stream ends."""
    out: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout
    with c.http.stream("GET", url, params=params, timeout=httpx.Timeout(timeout)) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.append((name, json.loads(line[6:])))
                if until(out) or name in ("end", "problem"):
                    break
            assert time.monotonic() < deadline, out
    return out


def lines_of(evs: list[tuple[str, Any]]) -> list[Any]:
    return [line for name, data in evs if name == "lines" for line in data]


def test_the_page_shows_the_tail_and_download_gives_the_whole_file(
    setup: Cluster, writer: dict[str, Any]
) -> None:
    c, alloc_id = setup, writer["ID"]
    r = c.http.get(f"/ui/allocations/{alloc_id}/logs", params={"task": "t"})
    assert r.status_code == 200, r.text
    assert r.headers["content-security-policy"].startswith("default-src 'self'")
    shown = pre_lines(r.text)
    # The last 64 KiB, from its first whole line: the last numbered lines and the ticks so far.
    numbered = [line for line in shown if line.startswith("line ")]
    assert numbered == FULL.splitlines()[-len(numbered) :] and 500 < len(numbered) < 700, len(numbered)
    assert shown[len(numbered) :] == [f"tick {i}" for i in range(len(shown) - len(numbered))]
    assert f'href="/ui/allocations/{alloc_id}/logs/download?task=t&amp;type=stdout"' in r.text

    d = c.http.get(f"/ui/allocations/{alloc_id}/logs/download", params={"task": "t", "type": "stdout"})
    assert d.status_code == 200
    assert d.headers["content-disposition"] == f'attachment; filename="{alloc_id[:8]}-t.stdout.log"'
    ticks = d.text[len(FULL) :].splitlines()
    assert d.text.startswith(FULL) and ticks == [f"tick {i}" for i in range(len(ticks))] and ticks
    err = c.http.get(f"/ui/allocations/{alloc_id}/logs/download", params={"task": "t", "type": "stderr"})
    assert (err.status_code, err.text) == (200, "<b>to stderr</b>\n")
    # stderr on the page, as text (never markup); the alloc page links each task's logs.
    stderr = c.http.get(f"/ui/allocations/{alloc_id}/logs?task=t&type=stderr").text
    assert pre_lines(stderr) == ["<b>to stderr</b>"] and "&lt;b&gt;to stderr&lt;/b&gt;" in stderr
    page = c.http.get(f"/ui/allocations/{alloc_id}").text
    assert f'href="/ui/allocations/{alloc_id}/logs?task=t"' in page


def test_the_filter_keeps_only_matching_lines(setup: Cluster, writer: dict[str, Any]) -> None:
    c, alloc_id = setup, writer["ID"]
    # A substring, on the page's tail (a filtered tail searches the last 1 MiB: all of it here).
    r = c.http.get(f"/ui/allocations/{alloc_id}/logs", params={"task": "t", "q": "line 12"})
    assert pre_lines(r.text) == [line for line in FULL.splitlines() if "line 12" in line]
    assert len(pre_lines(r.text)) == 100
    # A regular expression, on the stream (followed: the ticks written later are filtered too).
    want = [f"line {i:04d} " + "x" * 89 for i in range(0, 3000, 500)]
    params = {"task": "t", "q": r"^line \d[05]00 |^tick \d*[37]$", "regex": "1"}
    url = f"/ui/allocations/{alloc_id}/logs/stream"
    evs = events(c, url, params, lambda evs: len([x for x in lines_of(evs) if x.startswith("tick")]) >= 2)
    assert evs[0] == ("start", "")
    got = lines_of(evs)
    assert got[: len(want)] == want
    assert all(re.fullmatch(r"tick \d*[37]", x) for x in got[len(want) :]), got
    # Not followed: the tail, then the end.
    evs = events(c, url, {**params, "follow": "false"}, lambda evs: False)
    assert lines_of(evs)[: len(want)] == want and evs[-1] == ("end", "")
    # A bad pattern is refused, said in the page.
    r = c.http.get(f"/ui/allocations/{alloc_id}/logs", params={"task": "t", "q": "(", "regex": "1"})
    assert r.status_code == 400 and "not a regular expression" in r.text
    assert 'name="q" type="search" value="("' in r.text  # the form, to put it right
    # One that backtracks without end on these lines stops at the first: said, not served slowly.
    slow = {"task": "t", "q": "(x|xx)+y", "regex": "1"}
    started = time.monotonic()
    r = c.http.get(f"/ui/allocations/{alloc_id}/logs", params=slow)
    assert r.status_code == 200 and "takes too long" in r.text and pre_lines(r.text) == []
    evs = events(c, url, slow, lambda evs: False)
    assert [name for name, _ in evs] == ["start", "problem"] and "takes too long" in evs[1][1]
    assert time.monotonic() - started < 10


def test_the_stream_follows_the_log_as_it_writes(setup: Cluster, writer: dict[str, Any]) -> None:
    c, alloc_id = setup, writer["ID"]
    url = f"/ui/allocations/{alloc_id}/logs/stream"
    evs = events(c, url, {"task": "t", "q": "tick"}, lambda evs: len(lines_of(evs)) >= 2)
    first = int(lines_of(evs)[-1].split()[1])
    started = time.monotonic()
    evs = events(c, url, {"task": "t", "q": "tick"}, lambda evs: f"tick {first + 5}" in lines_of(evs))
    ticks = [int(x.split()[1]) for x in lines_of(evs)]
    assert ticks == list(range(ticks[0], first + 6)), ticks
    assert time.monotonic() - started >= 0.5  # written after the stream opened, as they came


def test_a_jobs_merged_tail_names_each_alloc_and_takes_in_later_ones(setup: Cluster) -> None:
    c = setup
    code = "import os, time\nwhile True:\n    print('hello from', os.environ['NOMAD_ALLOC_ID'], flush=True); time.sleep(0.3)\n"
    first = run_python(c, "many", code, count=2)
    url = "/ui/jobs/many@default/logs/stream"

    def named(ids: set[str]) -> Any:
        return lambda evs: {label for label, _ in lines_of(evs)} >= ids

    def check(evs: list[tuple[str, Any]]) -> None:
        for label, line in lines_of(evs):
            assert line.startswith("hello from " + label), (label, line)  # each line under its own alloc

    ids = {a["ID"][:8] for a in first}
    check(events(c, url, {}, named(ids)))
    # A third alloc, started while the tail is open, joins it.
    task = {"Driver": "raw_exec", "Config": {"command": sys.executable, "args": ["-c", code]}}
    body = service_job("many", task, count=3)
    with c.http.stream("GET", url, timeout=httpx.Timeout(30)) as r:
        evs: list[tuple[str, Any]] = []
        c.put("/v1/jobs", body)
        name, deadline = "", time.monotonic() + 30
        for line in r.iter_lines():
            assert time.monotonic() < deadline, evs
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                evs.append((name, json.loads(line[6:])))
                if len({label for label, _ in lines_of(evs)}) == 3:
                    break
    check(evs)
    all_ids = {a["ID"][:8] for a in c.get("/v1/job/many/allocations") if a["ClientStatus"] == "running"}
    assert {label for label, _ in lines_of(evs)} == all_ids and all_ids > ids
    notices = [d for n, d in evs if n == "notice"]
    assert {n["label"] for n in notices if n["text"] == "following"} == all_ids
    page = c.http.get("/ui/jobs/many@default/logs")
    assert page.status_code == 200 and 'data-mode="job"' in page.text
    assert 'href="/ui/jobs/many@default/logs"' in c.http.get("/ui/jobs/many@default").text


def test_what_cannot_be_shown_is_said_plainly(setup: Cluster, writer: dict[str, Any]) -> None:
    c, alloc_id = setup, writer["ID"]
    unknown = "00000000-0000-4000-8000-000000000000"
    for path in ("", "/download"):
        r = c.http.get(f"/ui/allocations/{unknown}/logs{path}", params={"task": "t"})
        assert r.status_code == 404 and "Not found" in r.text
    evs = events(c, f"/ui/allocations/{unknown}/logs/stream", {"task": "t"}, lambda evs: False)
    assert evs == [("problem", f"alloc not found: {unknown}")]
    assert c.http.get("/ui/jobs/nope@default/logs").status_code == 404
    for params in ({"group": "nope"}, {"task": "nope"}):
        r = c.http.get("/ui/jobs/writer@default/logs", params=params)
        assert r.status_code == 404 and "has no" in r.text, r.text
        evs = events(c, "/ui/jobs/writer@default/logs/stream", params, lambda evs: False)
        assert [n for n, _ in evs] == ["problem"] and "has no" in evs[0][1]
    # No such task; a bad type.
    r = c.http.get(f"/ui/allocations/{alloc_id}/logs", params={"task": "nope"})
    assert r.status_code == 404 and "has no task &#39;nope&#39;" in r.text
    r = c.http.get(f"/ui/allocations/{alloc_id}/logs", params={"task": "t", "type": "stdin"})
    assert r.status_code == 400 and "type must be stdout or stderr" in r.text
    # An alloc on a node whose agent cannot be reached: the page says so, it does not fail.
    node = {**node_json("gone-agent"), "Meta": {"kind": "gone"}, "HTTPAddr": "127.0.0.1:9"}
    c.put("/v1/drover/node/register", {"Node": node})
    job = service_job("ongone", {"Driver": "mock", "Config": {"run_for": "1h"}})
    job["Job"]["Constraints"] = [{"LTarget": "${meta.kind}", "RTarget": "gone", "Operand": "="}]
    c.put("/v1/jobs", job)
    placed = c.wait(lambda: c.get("/v1/job/ongone/allocations"), timeout=30)[0]
    r = c.http.get(f"/ui/allocations/{placed['ID']}/logs", params={"task": "t"})
    assert r.status_code == 200 and "cannot be reached" in r.text, r.text
    assert re.search(r'<p id="log-problem"[^>]*role="alert">[^<]*cannot be reached', r.text)
    evs = events(c, f"/ui/allocations/{placed['ID']}/logs/stream", {"task": "t"}, lambda evs: False)
    assert evs[0][0] == "problem" and "cannot be reached" in evs[0][1]
    d = c.http.get(f"/ui/allocations/{placed['ID']}/logs/download", params={"task": "t"})
    assert d.status_code == 502 and "cannot be reached" in d.text
