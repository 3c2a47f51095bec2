"""`drover alloc logs`: a task's stdout or stderr through the API (`/v1/client/fs/logs`, which
reaches the agent holding the alloc), printed as it comes in Nomad's frames, as `nomad alloc
logs` does; -f follows it as it is written."""

from __future__ import annotations

import base64
import json
import random
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import httpx
import typer

from drover.cli.api import DEFAULT_ADDRESS, ApiError, auth_headers, seg, tls_options

EXIT_FAILED = 1  # the API refused, nothing matched, or it could not be reached
EXIT_INTERRUPTED = 130  # Ctrl-C
# The API sends a heartbeat frame every second while following: this long without a byte
# means the connection is dead.
READ_TIMEOUT = 90.0
BYTES_PER_LINE = 120  # a first guess of how far back -n lines start (Nomad's)
DEFAULT_TAIL_LINES = 10
FULL_ID = 36

HELP = """Stream the logs of a task.

drover alloc logs [-f] [-stderr] [-tail] [-n N] [-c B] [-job] ALLOC_ID [TASK]

Prints the task's stdout (-stderr: its stderr) from the start; -f goes on
following it as it is written, across rotated files, until Ctrl-C. -tail
starts from the end: the last 10 lines, -n N lines, or -c B bytes (-n or -c
alone imply -tail). ALLOC_ID may be a prefix of at least two characters; with
-job, it is a job's ID and a running alloc of the job is picked at random.
TASK may be left out when the alloc's group has one task.

Exit codes: 0 the logs were printed (with -f: the stream ended); 1 the API
refused (its message is printed: no such alloc or task, no logs yet, a
simulated node), the ID matched no alloc or several, or the API could not be
reached; 130 Ctrl-C.
"""


def _opt(name: str, help: str, *more: str, **kw: Any) -> Any:
    return typer.Option(f"-{name}", f"--{name}", *more, help=help, **kw)


def logs(
    alloc_id: Annotated[str, typer.Argument(help="The alloc's ID or prefix (-job: the job's ID).")],
    task: Annotated[str, typer.Argument(help="The task (optional when the group has one).")] = "",
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Follow the logs as written.")] = False,
    stderr: Annotated[bool, _opt("stderr", "Print the task's stderr, not its stdout.")] = False,
    tail: Annotated[bool, _opt("tail", "Start from the end of the logs.")] = False,
    lines: Annotated[int | None, typer.Option("-n", help="With -tail: this many lines.", min=0)] = None,
    count: Annotated[int | None, typer.Option("-c", help="With -tail: this many bytes.", min=0)] = None,
    job: Annotated[bool, _opt("job", "ALLOC_ID is a job's ID: use one of its running allocs.")] = False,
    address: Annotated[
        str, _opt("address", "The API's address.", envvar=["DROVER_ADDR", "NOMAD_ADDR"])
    ] = DEFAULT_ADDRESS,
    namespace: Annotated[
        str, _opt("namespace", "The namespace.", envvar=["DROVER_NAMESPACE", "NOMAD_NAMESPACE"])
    ] = "default",
) -> None:
    """Print a task's logs (HELP says how)."""
    reader = LogReader(address, namespace)
    try:
        alloc = reader.pick_job_alloc(alloc_id) if job else reader.resolve_alloc(alloc_id)
        task = task or reader.only_task(alloc)
        log_type = "stderr" if stderr else "stdout"
        out = sys.stdout.buffer
        origin, back = "start", 0
        if tail or lines is not None or count is not None:
            origin = "end"
            if count is not None:
                back = count
            else:
                n = lines if lines is not None else DEFAULT_TAIL_LINES
                data = reader.last_lines(alloc["ID"], task, log_type, n)
                back = len(data)
                if not follow:
                    out.write(data)
                    return
        for data in reader.read(alloc["ID"], task, log_type, follow, origin, back):
            out.write(data)
            out.flush()
        out.flush()
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except ApiError as e:
        typer.echo(f"Error: {e.message}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    finally:
        reader.close()


class LogReader:
    """The API calls `drover alloc logs` makes."""

    def __init__(self, address: str, namespace: str) -> None:
        self.address = address.rstrip("/")
        self.namespace = namespace
        self.http = httpx.Client(
            base_url=self.address,
            timeout=httpx.Timeout(30.0, read=READ_TIMEOUT),
            headers=auth_headers(),
            **tls_options(self.address),
        )

    def close(self) -> None:
        self.http.close()

    def _get(self, path: str, **params: Any) -> Any:
        try:
            r = self.http.get(path, params={"namespace": self.namespace, **params})
        except httpx.TransportError as e:
            raise ApiError(0, f"can't reach the API at {self.address}: {e or type(e).__name__}") from e
        if r.status_code != 200:
            raise ApiError(r.status_code, r.text.strip() or f"{r.status_code} {r.reason_phrase}")
        return r.json()

    def resolve_alloc(self, alloc_id: str) -> dict[str, Any]:
        """The alloc `alloc_id` names, whole or as a prefix (as Nomad's CLI takes it)."""
        if len(alloc_id) < 2:
            raise ApiError(400, "Alloc ID must contain at least two characters")
        if len(alloc_id) == FULL_ID:
            return dict(self._get(f"/v1/allocation/{seg(alloc_id)}"))
        found = self._get("/v1/allocations", prefix=alloc_id)
        if not found:
            raise ApiError(404, f"No allocation(s) with prefix or id {alloc_id!r} found")
        if len(found) > 1:
            listed = "\n".join(f"  {a['ID']}  {a['Name']}  {a['ClientStatus']}" for a in found)
            raise ApiError(400, f"Prefix {alloc_id!r} matched multiple allocations:\n{listed}")
        return dict(self._get(f"/v1/allocation/{seg(found[0]['ID'])}"))

    def pick_job_alloc(self, job_id: str) -> dict[str, Any]:
        """A running alloc of the job, picked at random (Nomad's -job)."""
        running = [
            a for a in self._get(f"/v1/job/{seg(job_id)}/allocations") if a["ClientStatus"] == "running"
        ]
        if not running:
            raise ApiError(404, f"job {job_id!r} has no running allocations")
        return dict(self._get(f"/v1/allocation/{seg(random.choice(running)['ID'])}"))

    def only_task(self, alloc: dict[str, Any]) -> str:
        """The alloc's task when its group has one; otherwise a refusal listing them."""
        tasks = sorted(alloc.get("TaskStates") or {})
        if not tasks:
            job = alloc.get("Job") or self._get(f"/v1/job/{seg(alloc['JobID'])}")
            groups = [g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")]
            tasks = sorted(t["Name"] for g in groups for t in g.get("Tasks") or [])
        if len(tasks) == 1:
            return str(tasks[0])
        listed = "\n".join(f"  * {t}" for t in tasks)
        raise ApiError(
            400,
            f"Allocation {alloc['ID']!r} is running the following tasks:\n{listed}\n\nPlease specify the task.",
        )

    def read(
        self, alloc_id: str, task: str, log_type: str, follow: bool, origin: str = "start", offset: int = 0
    ) -> Iterator[bytes]:
        """The logs' bytes as they come."""
        params: dict[str, str | int] = {"task": task, "type": log_type, "follow": str(follow).lower(), "origin": origin,
                  "offset": offset, "namespace": self.namespace}  # fmt: skip
        try:
            with self.http.stream("GET", f"/v1/client/fs/logs/{seg(alloc_id)}", params=params) as r:
                if r.status_code != 200:
                    raise ApiError(r.status_code, r.read().decode(errors="replace").strip())
                for doc in _frames(r.iter_bytes()):
                    if doc.get("Data"):
                        yield base64.b64decode(doc["Data"])
                    if doc.get("FileEvent"):
                        return
        except httpx.TransportError as e:
            raise ApiError(0, f"lost the API at {self.address}: {e or type(e).__name__}") from e

    def last_lines(self, alloc_id: str, task: str, log_type: str, n: int) -> bytes:
        """The last `n` lines (a last line with no newline counts), read back further until
        they are all there or the logs' start is reached."""
        back = max(1, n) * BYTES_PER_LINE
        while True:
            data = b"".join(self.read(alloc_id, task, log_type, False, "end", back))
            body = data[:-1] if data.endswith(b"\n") else data
            if body.count(b"\n") >= n or len(data) < back:
                break
            back *= 4
        if n == 0:
            return b""
        cut = body.split(b"\n")
        return b"\n".join(cut[-n:]) + data[len(body) :] if len(cut) > n else data


def _frames(chunks: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """Nomad's stream of JSON frames, however they are split across reads and separated."""
    decoder = json.JSONDecoder()
    buf = ""
    for chunk in chunks:
        buf += chunk.decode()
        while True:
            buf = buf.lstrip()
            if not buf:
                break
            try:
                doc, end = decoder.raw_decode(buf)
            except json.JSONDecodeError:
                break  # the rest of the frame is still coming
            buf = buf[end:]
            yield doc
