"""A template's `wait { min max }` as consul-template's quiescence holds it: once the templates
have rendered, a change to what they read does not render a waiting template at once; it
renders when no other change came for `min`, and at the latest `max` after the first change.
Pure: the caller hands in the time (ns)."""

from __future__ import annotations

from dataclasses import dataclass

from drover.model.taskfiles import WaitConfig


@dataclass
class Quiescence:
    min: int
    max: int
    due: int | None = None  # when to render, while a change waits
    deadline: int = 0

    @classmethod
    def of(cls, wait: WaitConfig) -> Quiescence:
        """consul-template's WaitConfig.Finalize: a max left out is four times the min."""
        return cls(wait.min, wait.max or 4 * wait.min)

    def tick(self, now: int) -> None:
        """The data changed at `now`: wait `min` more, but not past `max` after the first change."""
        if self.due is None:
            self.due, self.deadline = now + self.min, now + self.max
        elif now + self.min < self.deadline:
            self.due = now + self.min
        elif now < self.deadline:
            self.due = self.deadline

    def fire(self, now: int) -> bool:
        """Whether the waiting change renders now (it is then no longer waiting)."""
        if self.due is None or now < self.due:
            return False
        self.due = None
        return True
