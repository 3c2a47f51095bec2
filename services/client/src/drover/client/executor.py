"""The raw_exec executor: `python -m drover.client.executor --exit-file F --log-dir D --task T
[--max-files N] [--max-file-size-mb M] [--no-logs] [--kill-signal SIGINT] [--kill-timeout S]
-- command args...`.

It leads a process group of its own and runs the task's command in it as its child, copies
the command's stdout and stderr from pipes into rotated log files (drover.client.logrotate, as
Nomad's logmon), and writes the command's exit code to the exit file once the output is all
written (negative: killed by that signal). Told to stop (SIGTERM or SIGINT from the agent), it
sends the task's kill signal to the command alone, and SIGKILL to every other process of its
group once the kill timeout has passed, as Nomad's executor shuts a task down; whatever the
command leaves running in the group when it exits is killed too. Killing the group kills the
executor with its task. Because the executor, not the agent, is the
command's parent and the logs' writer, an agent that restarts finds its tasks still running,
their output still going to the files, and learns their exit codes from the file (Nomad's
executor and logmon, in small).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from drover.client.logrotate import MB, FileRotator, pump
from drover.client.statefile import write_atomically

# After the command exits, how long the executor waits for its output pipes to close (a
# process it left in the background may hold them open) before it reports the exit.
DRAIN_TIMEOUT = 2.0


def _stream(log_dir: Path, task: str, log_type: str, args: argparse.Namespace) -> FileRotator:
    return FileRotator(log_dir, task, log_type, args.max_files, args.max_file_size_mb * MB)


# The signals a task may be sent or may trap, each at its default in the task: a signal ignored
# is inherited ignored across exec, so an agent started under nohup (SIGHUP ignored) would give
# every task a SIGHUP it cannot trap - a template's change_signal lost.
TASK_SIGNALS = tuple(
    getattr(signal, name)
    for name in (
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGTERM",
        "SIGUSR1",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
    )
    if hasattr(signal, name)
)


def _default_signals() -> None:
    """In the task, between fork and exec (the executor has no thread yet)."""
    for sig in TASK_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def _start(
    command: list[str], args: argparse.Namespace
) -> tuple[subprocess.Popen[bytes], list[threading.Thread]]:
    """The command started, leading its own process group, its output piped into the rotated
    files by a thread a stream (none when logs are disabled: the output is dropped). A command
    that cannot start says why in its stderr log."""
    if args.no_logs:
        devnull = subprocess.DEVNULL
        return subprocess.Popen(
            command,
            stdout=devnull,
            stderr=devnull,
            stdin=devnull,
            process_group=0,
            preexec_fn=_default_signals,
        ), []
    log_dir = Path(args.log_dir)
    stdout, stderr = _stream(log_dir, args.task, "stdout", args), _stream(log_dir, args.task, "stderr", args)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        child = subprocess.Popen(
            command, stdout=out_w, stderr=err_w, stdin=subprocess.DEVNULL, preexec_fn=_default_signals
        )
    except OSError as e:
        stderr.write(f"failed to start {command[0]!r}: {e}\n".encode())
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    pumps = [
        threading.Thread(target=pump, args=(fd, rotator), daemon=True)
        for fd, rotator in ((out_r, stdout), (err_r, stderr))
    ]
    for t in pumps:
        t.start()
    return child, pumps


def _group_members() -> list[int]:
    """The other processes of the executor's process group (from /proc)."""
    me, group = os.getpid(), os.getpgid(0)
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        # After the command name in parentheses: state, ppid, pgrp. A zombie is dead already.
        state, _, pgrp = stat.rsplit(b")", 1)[1].split()[:3]
        if int(pgrp) == group and state != b"Z":
            out.append(int(entry.name))
    return out


def _kill_group() -> None:
    """SIGKILL every other process of the group, until none is left (one may fork meanwhile)."""
    for _ in range(10):
        members = _group_members()
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exit-file", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--max-files", type=int, default=10)
    ap.add_argument("--max-file-size-mb", type=int, default=10)
    ap.add_argument("--no-logs", action="store_true", help="the task's logs block disables them")
    ap.add_argument("--kill-signal", default="SIGINT", help="sent to the command to stop it")
    ap.add_argument("--kill-timeout", type=float, default=5.0, help="seconds before SIGKILL")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    exit_file = Path(args.exit_file)
    kill_signal = signal.Signals[args.kill_signal]
    stopping = threading.Event()
    started: list[subprocess.Popen[bytes]] = []

    def stop(_signum: int, _frame: object) -> None:
        """Told to stop: the kill signal now, SIGKILL to the group after the kill timeout (a
        stop that comes before the command is started is carried out once it is)."""
        if stopping.is_set() or not started:
            stopping.set()
            return
        stopping.set()
        started[0].send_signal(kill_signal)
        timer = threading.Timer(args.kill_timeout, _kill_group)
        timer.daemon = True
        timer.start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        child, pumps = _start(command, args)
    except OSError as e:
        print(f"failed to start {command[0]!r}: {e}", file=sys.stderr)
        write_atomically(exit_file, "127")
        sys.exit(127)
    started.append(child)
    if stopping.is_set():
        stopping.clear()
        stop(signal.SIGTERM, None)
    code = child.wait()
    # What the command left behind in its group (holding the output pipes open, say) goes too.
    _kill_group()
    for t in pumps:
        t.join(DRAIN_TIMEOUT)
    write_atomically(exit_file, str(code))
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
