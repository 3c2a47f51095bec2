"""`drover event tail` against recorded frames of Nomad's event stream form
(`stream_frames.ndjson`): the line each event gets, -json, the query it sends, a dropped
connection resumed from the last index without a repeat, an error frame, and the API's refusal.
The frames are served over a real socket by a small HTTP server that plays a script."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from typer.testing import CliRunner

from drover.cli.events import frames_of, line
from drover.cli.main import app

FRAMES = (Path(__file__).parent / "stream_frames.ndjson").read_text().splitlines()


def events() -> list[dict[str, Any]]:
    return [e for f in frames_of(FRAMES) for e in f["Events"]]


def test_a_line_per_event() -> None:
    got = [line(e) for e in events()]
    assert got == [
        "       5  Node        NodeRegistration                f2c3d4e5-6789-4abc-8def-0123456789ab  Name=node-1 Status=ready SchedulingEligibility=eligible",
        "      12  Job         JobRegistered                   web  Type=service Status=pending Version=0",
        "      12  Evaluation  EvaluationUpdated               5b1c8c2e-8f0a-4b7e-9d6c-0e1f2a3b4c5d  JobID=web Status=pending TriggeredBy=job-register",
        "      13  Allocation  PlanResult                      a0000000-0000-4000-8000-000000000000  Name=web.web[0] NodeID=f2c3d4e5 DesiredStatus=run ClientStatus=pending",
        "      13  Allocation  PlanResult                      a1000000-0000-4000-8000-000000000000  Name=web.web[1] NodeID=f2c3d4e5 DesiredStatus=run ClientStatus=pending",
        "      13  Evaluation  EvaluationUpdated               5b1c8c2e-8f0a-4b7e-9d6c-0e1f2a3b4c5d  JobID=web Status=complete TriggeredBy=job-register",
        "      14  Allocation  AllocationUpdated               a0000000-0000-4000-8000-000000000000  Name=web.web[0] NodeID=f2c3d4e5 DesiredStatus=run ClientStatus=running",
        '      15  Deployment  DeploymentStatusUpdate          d7e8f9a0-1111-4222-8333-444455556666  JobID=web Status=running StatusDescription="Deployment is running"',
        "      16  JobRestart  JobRestartStarted               r1  JobID=web Status=running BatchNumber=0",
    ]


@pytest.mark.parametrize(
    ("event", "want"),
    [
        # Another namespace is shown with the key; a node has none.
        (
            {"Index": 3, "Topic": "Job", "Type": "JobDeregistered", "Key": "api", "Namespace": "prod",
             "Payload": {"Job": {"Type": "batch", "Status": "dead", "Version": 2, "Stop": True}}},
            "       3  Job         JobDeregistered                 prod/api  Type=batch Status=dead Version=2 Stop=True",
        ),
        (
            {"Index": 4, "Topic": "Node", "Type": "NodeDrain", "Key": "n1", "Namespace": "",
             "Payload": {"Node": {"Name": "n1", "Status": "ready", "SchedulingEligibility": "ineligible",
                                  "Drain": True}}},
            "       4  Node        NodeDrain                       n1  Name=n1 Status=ready SchedulingEligibility=ineligible Drain=True",
        ),
        # A payload of a kind it does not know: the event's head alone.
        (
            {"Index": 9, "Topic": "Service", "Type": "ServiceRegistration", "Key": "s", "Payload": {"Service": {}}},
            "       9  Service     ServiceRegistration             s",
        ),
    ],
)  # fmt: skip
def test_lines_of_other_events(event: dict[str, Any], want: str) -> None:
    assert line(event) == want


def test_heartbeats_are_skipped_and_an_error_frame_raises() -> None:
    from drover.cli.events import StreamError

    assert [f["Index"] for f in frames_of(["{}", "", '{"Index": 1, "Events": [{"Index": 1}]}', "{}"])] == [1]
    with pytest.raises(StreamError, match="behind"):
        list(frames_of(['{"Index": 1, "Events": [{"Index": 1}]}', '{"Error": "subscriber fell behind"}']))


class Script:
    """What the server answers, one reply per connection: (status, lines)."""

    def __init__(self, replies: list[tuple[int, list[str]]]) -> None:
        self.replies = replies
        self.queries: list[list[tuple[str, str]]] = []


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(script: Script) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                assert url.path == "/v1/event/stream"
                script.queries.append(parse_qsl(url.query))
                status, lines = script.replies.pop(0) if script.replies else (200, [])
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if status == 200 else "text/plain")
                self.end_headers()
                for text in lines:  # HTTP/1.0: the body ends when the connection closes
                    self.wfile.write(text.encode() + b"\n")
                    self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def tail(*args: str) -> Any:
    return CliRunner().invoke(app, ["event", "tail", *args], env={"DROVER_ADDR": "", "NOMAD_ADDR": ""})


def test_json_prints_every_event_once_across_a_dropped_connection(serve: Any) -> None:
    upto_13 = FRAMES[:5]  # the connection drops after index 13 and a heartbeat
    again = [FRAMES[3], *FRAMES[5:], json.dumps({"Error": "subscriber fell behind"})]
    script = Script([(200, upto_13), (200, again)])
    address = serve(script)
    result = tail("-address", address, "-topic", "Job:web", "-topic", "Node", "-index", "3", "-json")
    assert result.exit_code == 1, result.output
    printed = [json.loads(t) for t in result.stdout.splitlines()]
    assert printed == events()  # frame 13 came twice: printed once
    assert "subscriber fell behind; resume with -index 16" in result.stderr
    first, second = script.queries
    assert first == [("namespace", "default"), ("topic", "Job:web"), ("topic", "Node"), ("index", "3")]
    assert ("index", "13") in second  # from the last index seen, not from the start again


def test_the_api_refusal_is_printed_and_exits_2(serve: Any) -> None:
    address = serve(Script([(400, ["Invalid topic query: topic a:b:c is not Topic or Topic:Key"])]))
    result = tail("-address", address, "-topic", "a:b:c")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Error: Invalid topic query: topic a:b:c is not Topic or Topic:Key" in result.stderr


def test_an_api_that_cannot_be_reached_at_the_start_exits_2_at_once(serve: Any) -> None:
    address = serve(Script([]))
    port = int(address.rsplit(":", 1)[1])
    result = tail("-address", f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}")
    assert result.exit_code == 2
    assert "can't reach the API" in result.stderr


def test_a_negative_index_is_refused() -> None:
    result = tail("-index", "-1")
    assert result.exit_code == 2
