"""`drover event tail`: follow the cluster's event stream (`GET /v1/event/stream`, Nomad's
newline-delimited frames) and print a readable line per event, or each event as JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console

from drover.cli.api import DEFAULT_ADDRESS, ApiError, auth_headers, tls_options

EXIT_STREAM_ERROR = 1  # the server ended the stream with an error (the subscriber fell behind)
EXIT_REFUSED = 2  # the API refused the request (bad topic or index) or could not be reached
EXIT_INTERRUPTED = 130  # Ctrl-C
# How long tailing rides out an API it can't reach (one restarting) before giving up.
LOST_API_GRACE = 30.0
# Nomad's heartbeat is every 30 s: a read this long without a byte means the connection is dead.
READ_TIMEOUT = 90.0

HELP = """Follow the cluster's event stream.

drover event tail [-topic Topic[:Key]]... [-index N] [-namespace ns] [-json]

Prints a line per event as it happens: its index, topic, type, key and what
changed. -json prints each event as a line of JSON instead (Nomad's event
form: Topic, Type, Key, Namespace, FilterKeys, Index, Payload).

-topic narrows the stream (repeat it): Job, Evaluation, Allocation,
Deployment, Node, JobRestart or *, with :Key for one object (a job's ID, an
alloc's, ...; "Evaluation:web" and "Allocation:web" also match the evals and
allocs of job web, as their FilterKeys hold its ID).
-index N starts from index N, replaying the log from there: nothing between
N and now is missed. When the connection drops, tailing resumes from the
last index it printed, without repeating an event.

Exit codes: 1 the server ended the stream with an error (resume with -index
from the last index printed); 2 the API refused the request (its message is
printed), could not be reached, or was lost for 30 s; 130 Ctrl-C.
"""


def _opt(name: str, help: str, **kw: Any) -> Any:
    """An option spelt as Nomad's (-name) and as is usual (--name)."""
    return typer.Option(f"-{name}", f"--{name}", help=help, **kw)


def tail(
    topic: Annotated[
        list[str] | None, _opt("topic", "Topic or Topic:Key to follow (repeat it).", metavar="T[:K]")
    ] = None,
    index: Annotated[int, _opt("index", "Start from this index.", metavar="N", min=0)] = 0,
    as_json: Annotated[bool, _opt("json", "Print each event as a line of JSON.")] = False,
    address: Annotated[
        str, _opt("address", "The API's address.", envvar=["DROVER_ADDR", "NOMAD_ADDR"])
    ] = DEFAULT_ADDRESS,
    namespace: Annotated[
        str, _opt("namespace", "The namespace.", envvar=["DROVER_NAMESPACE", "NOMAD_NAMESPACE"])
    ] = "default",
) -> None:
    """Follow the event stream (HELP says how)."""
    # No emoji: ":b:" in a key or a message is text, not a picture.
    console = Console(highlight=False, soft_wrap=True, emoji=False)
    follower = Follower(address, namespace, topic or [], index)
    try:
        for event in follower.events():
            console.print(json.dumps(event, separators=(",", ":")) if as_json else line(event), markup=False)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except StreamError as e:
        _error(f"{e}; resume with -index {follower.last}")
        raise typer.Exit(EXIT_STREAM_ERROR) from None
    except ApiError as e:
        _error(e.message)
        raise typer.Exit(EXIT_REFUSED) from None


class StreamError(Exception):
    """The server ended the stream with an error frame."""


class Follower:
    """The events of the stream from `index` on, across dropped connections: each reconnect
    asks again from the last index seen and drops what it had already given."""

    def __init__(self, address: str, namespace: str, topics: list[str], index: int) -> None:
        self.address = address.rstrip("/")
        self.params: list[tuple[str, str | int]] = [("namespace", namespace), *(("topic", t) for t in topics)]
        self.start = index
        self.last = 0  # the index of the last event given
        self.connected = False  # once the API has answered: until then, no grace

    def events(self) -> Iterator[dict[str, Any]]:
        lost_at = 0.0
        while True:
            try:
                for event in self._connect():
                    lost_at = 0.0
                    yield event
            except ApiError as e:
                # An API restarting (unreachable, or failing) is ridden out; a refusal, or an
                # API gone too long, is not.
                lost_at = lost_at or time.monotonic()
                gone = time.monotonic() - lost_at > LOST_API_GRACE
                if 0 < e.status < 500 or gone or not self.connected:
                    raise
                time.sleep(1.0)
            # The stream ended without an error (the API stopped): from where it was.

    def _connect(self) -> Iterator[dict[str, Any]]:
        # Asked from the last index itself, not the one after: whether the server starts at or
        # after it, nothing is missed, and what comes again is dropped below.
        start = self.last or self.start
        timeout = httpx.Timeout(10.0, read=READ_TIMEOUT)
        url = f"{self.address}/v1/event/stream"
        try:
            headers = auth_headers()
            tls = tls_options(url)
            with httpx.stream(
                "GET", url, params=[*self.params, ("index", start)], timeout=timeout, headers=headers, **tls
            ) as r:
                if r.status_code != 200:
                    r.read()
                    raise ApiError(r.status_code, r.text.strip() or f"{r.status_code} {r.reason_phrase}")
                self.connected = True
                for frame in frames_of(r.iter_lines()):
                    # A frame is one index's events: given whole, or (come again) not at all.
                    if frame["Index"] > self.last:
                        yield from frame.get("Events") or []
                        self.last = frame["Index"]
        except httpx.TransportError as e:
            raise ApiError(0, f"can't reach the API at {self.address}: {e or type(e).__name__}") from e


def frames_of(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The frames of a stream's lines, in order, heartbeats (`{}`) skipped; an error frame
    raises StreamError."""
    for text in lines:
        if not text.strip():
            continue
        frame = json.loads(text)
        if frame.get("Error"):
            raise StreamError(str(frame["Error"]))
        if frame.get("Events"):
            yield frame


# What the line of an event shows of its object, by the payload's key.
_SUMMARY: dict[str, tuple[str, ...]] = {
    "Job": ("Type", "Status", "Version", "Stop"),
    "Evaluation": ("JobID", "Status", "TriggeredBy", "StatusDescription"),
    "Allocation": ("Name", "NodeID", "DesiredStatus", "ClientStatus"),
    "Deployment": ("JobID", "Status", "StatusDescription"),
    "Node": ("Name", "Status", "SchedulingEligibility", "Drain"),
    "JobRestart": ("JobID", "Status", "BatchNumber"),
}
_SHORT_IDS = ("NodeID",)


def line(event: dict[str, Any]) -> str:
    """A readable line for an event: index, topic, type, key and its object's main fields."""
    head = f"{event.get('Index', 0):>8}  {event.get('Topic', '?'):<10}  {event.get('Type', '?'):<30}"
    key = str(event.get("Key", ""))
    ns = event.get("Namespace") or ""
    where = f"{ns}/{key}" if ns and ns != "default" and event.get("Topic") != "Node" else key
    return f"{head}  {where}  {summary(event.get('Payload') or {})}".rstrip()


def summary(payload: dict[str, Any]) -> str:
    """`Status=running ClientStatus=pending ...`: the fields worth a glance, of the payload's
    one object; empty and false values are left out."""
    parts = []
    for kind, fields in _SUMMARY.items():
        obj = payload.get(kind)
        if not isinstance(obj, dict):
            continue
        for field in fields:
            value = obj.get(field)
            if value is None or value == "" or value is False:
                continue
            text = str(value)[:8] if field in _SHORT_IDS else str(value)
            parts.append(f"{field}={json.dumps(text) if ' ' in text else text}")
        break
    return " ".join(parts)


def _error(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True, emoji=False).print(
        f"Error: {message}", markup=False
    )
