"""The raw_exec executor: `python -m drover.client.executor --exit-file F -- command args...`.

It runs the task's command as its child in its own session, passes SIGTERM/SIGINT on, and
writes the command's exit code to the exit file when it ends (negative: killed by that signal).
Because the executor, not the agent, is the command's parent, an agent that restarts finds its
tasks still running and learns their exit codes from the file (Nomad's executor, in small).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from drover.client.statefile import write_atomically


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exit-file", required=True)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    exit_file = Path(args.exit_file)
    try:
        child = subprocess.Popen(command)
    except OSError as e:
        print(f"failed to start {command[0]!r}: {e}", file=sys.stderr)
        write_atomically(exit_file, "127")
        sys.exit(127)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = child.wait()
    write_atomically(exit_file, str(code))
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
