"""The task states of one alloc that `drover sim` runs, in the API's form, kept as the agent's
task runners keep theirs (drover.client.runner): State, Failed, Restarts, the times, and the
last events - Received and Started, Terminated or Killed, and for an operator's restart
request "Restart Signaled" (its ID in Details), then Terminated, Restarting and Started again.

Each restart request is acted on once: `restart_handled` is the last one acted on; an alloc
first seen with a request already set keeps it there (it was made before the sim ran the
alloc, so it is not for this run, as the agent judges)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# As many events per task as the agent keeps.
EVENTS_KEPT = 10
SIGNALED = "Restart Signaled"


@dataclass
class SimTasks:
    names: list[str]
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    restart_handled: str = ""
    # The mock driver's run_for (s; 0: until stopped) and exit_code, run again from a restart.
    run_for: float = 0.0
    exit_code: int = 0
    # Bumped by every restart: a finish timer armed for an earlier run is void.
    run: int = 0

    def _event(self, task: str, kind: str, message: str, now: int, **details: str) -> None:
        event = {
            "Type": kind,
            "Time": now,
            "Message": message,
            "DisplayMessage": message or kind,
            "Details": details,
        }
        state = self.states[task]
        state["Events"] = [*state["Events"], event][-EVENTS_KEPT:]

    def start(self, now: int, failed: bool = False) -> None:
        """Every task received and started (or, with `failed`, unable to start)."""
        for t in self.names:
            self.states[t] = {
                "State": "dead" if failed else "running", "Failed": failed, "Restarts": 0,
                "LastRestart": 0, "StartedAt": 0 if failed else now, "FinishedAt": now if failed else 0,
                "Events": [],
            }  # fmt: skip
            self._event(t, "Received", "Task received by client", now)
            if failed:
                self._event(t, "Driver Failure", "failed to start task", now)
            else:
                self._event(t, "Started", "Task started by client", now)

    def finish(self, now: int, exit_code: int | None, failed: bool = False) -> None:
        """Every task that runs ends: it exited with `exit_code`, or (None) it was killed."""
        for t in self.names:
            state = self.states[t]
            if state["State"] == "dead":
                continue
            if exit_code is None:
                self._event(t, "Killed", "Task successfully killed", now)
            else:
                self._event(t, "Terminated", f"Exit Code: {exit_code}", now, exit_code=str(exit_code))
            state.update(State="dead", Failed=failed, FinishedAt=now)

    def signal(self, request: dict[str, Any], now: int) -> list[str]:
        """Act on an operator's restart request (its API form), once per ID: the tasks it
        names (TaskName, TaskNames), else every running one, get "Restart Signaled". Returns
        the tasks signalled, none if the request was acted on before."""
        rid = request.get("ID") or ""
        if not rid or rid == self.restart_handled:
            return []
        self.restart_handled = rid
        named = request.get("TaskNames") or ([request["TaskName"]] if request.get("TaskName") else [])
        chosen = [
            t for t in (named or self.names) if t in self.states and self.states[t]["State"] == "running"
        ]
        for t in chosen:
            self._event(t, SIGNALED, "User requested restart", now, restart_id=rid)
        return chosen

    def restarted(self, tasks: list[str], now: int) -> None:
        """The signalled `tasks` stopped and started again at once, not counted against the
        restart block (Restarts counts them all, as the agent's do)."""
        self.run += 1
        for t in tasks:
            state = self.states[t]
            self._event(t, "Terminated", "Exit Code: 0", now, exit_code="0")
            self._event(t, "Restarting", "Task restarting in 0s", now)
            self._event(t, "Started", "Task started by client", now)
            state.update(State="running", Restarts=state["Restarts"] + 1, LastRestart=now)

    def to_api(self) -> dict[str, dict[str, Any]]:
        """A copy to report: later changes must not reach an update already queued."""
        return {t: {**s, "Events": list(s["Events"])} for t, s in self.states.items()}
