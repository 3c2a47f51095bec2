"""A docker task's stdout and stderr into Drover's rotated log files (drover.client.logrotate),
as Nomad's docklog copies them: one follower thread a stream reads the container's log through
the Docker API until the container ends.

Docker keeps the container's output (json-file) while the agent is away, so a follower started
again after an agent restart resumes where the last one stopped: each log entry comes with its
timestamp, the newest one written is checkpointed in a file beside the task (at most every
CHECKPOINT_EVERY seconds, and when the follower ends), and a resumed follower asks for entries
since that time and skips those not newer. At most the entries of the last CHECKPOINT_EVERY
before an agent's kill are written twice; none is lost."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drover.client.logrotate import MB, FileRotator
from drover.client.statefile import write_atomically

log = logging.getLogger("drover.client")
CHECKPOINT_EVERY = 0.5


def parse_timestamp(stamp: bytes) -> int:
    """Docker's RFC 3339 timestamp with up to 9 fractional digits ("...T15:00:00.1234Z") in
    ns since the epoch."""
    text = stamp.decode()
    whole, _, frac = text.rstrip("Z").partition(".")
    seconds = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return int(seconds) * 1_000_000_000 + int((frac + "000000000")[:9])


def checkpoint_path(task_dir: Path, log_type: str) -> Path:
    return task_dir / f"docker-{log_type}.since"


def read_checkpoint(task_dir: Path, log_type: str) -> int:
    try:
        return int(checkpoint_path(task_dir, log_type).read_text())
    except (OSError, ValueError):
        return 0


class LogFollower:
    """Copies one stream of a container into its rotated files, from a thread of its own."""

    def __init__(
        self,
        api: Any,
        container_id: str,
        log_dir: Path,
        task_dir: Path,
        task: str,
        log_type: str,
        max_files: int,
        max_file_size_mb: int,
        tty: bool = False,
    ) -> None:
        self.api = api
        # Without a TTY the API frames each log entry ("<timestamp> <output>") whole, a long
        # line's parts each as an entry of its own; with one, the stream is raw bytes.
        self.framed = not tty
        self.container_id = container_id
        self.log_type = log_type
        self.task_dir = task_dir
        self.rotator = FileRotator(log_dir, task, log_type, max_files, max_file_size_mb * MB)
        self.since = read_checkpoint(task_dir, log_type)
        self._saved_at = 0.0
        self.thread = threading.Thread(target=self._run, name=f"docker-logs-{task}-{log_type}", daemon=True)

    def start(self) -> LogFollower:
        self.thread.start()
        return self

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            stream = self.api.logs(
                self.container_id,
                stdout=self.log_type == "stdout",
                stderr=self.log_type == "stderr",
                stream=True,
                follow=True,
                timestamps=True,
                since=self.since / 1e9 if self.since else None,
            )
            pending = b""
            for chunk in stream:
                if self.framed:
                    self._entry(chunk)
                    self._checkpoint()
                else:
                    pending = self._lines(pending + chunk)
            if pending:
                self._entry(pending)
        except Exception as e:  # the engine gone, the container removed: the output ends here
            log.warning("docker logs of %s (%s) ended: %s", self.container_id[:12], self.log_type, e)
        finally:
            self._checkpoint(force=True)
            with contextlib.suppress(OSError):
                self.rotator.close()

    def _lines(self, data: bytes) -> bytes:
        """Write the whole entries of raw `data`; the rest (a line not yet ended) is returned."""
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._entry(data[start : end + 1])
            start = end + 1
        self._checkpoint()
        return data[start:]

    def _entry(self, entry: bytes) -> None:
        """One log entry, written unless an earlier follower of the task wrote it already."""
        stamp, _, output = entry.partition(b" ")
        try:
            at = parse_timestamp(stamp)
        except ValueError:
            at, output = 0, entry
        if at and at <= self.since:
            return
        self.since = max(self.since, at)
        try:
            self.rotator.write(output)
        except OSError as e:
            log.warning("%s %s: output dropped: %s", self.rotator.task, self.log_type, e)

    def _checkpoint(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.since and (force or now - self._saved_at >= CHECKPOINT_EVERY):
            self._saved_at = now
            with contextlib.suppress(OSError):
                write_atomically(checkpoint_path(self.task_dir, self.log_type), str(self.since))
