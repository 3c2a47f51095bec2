"""Arguments read in a decode: each evaluated in its scope with runtime interpolations as their
text, a problem recorded against its file, line and field rather than raised, so that one
decode reports every problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drover.jobspec.context import Context
from drover.jobspec.errors import EvalError, Problems
from drover.jobspec.evaluate import evaluate
from drover.jobspec.interpolation import known
from drover.jobspec.syntax import Attribute


class Reader:
    def __init__(self, ctx: Context, problems: Problems) -> None:
        self.ctx = ctx
        self.problems = problems

    def problem(self, line: int, where: str, message: str) -> None:
        self.problems.add(self.ctx.filename, line, where, message)

    def value(self, attr: Attribute, scope: Mapping[str, Any], where: str) -> tuple[bool, Any]:
        """(True, the value) of an argument, or (False, None) with the problem recorded."""
        try:
            return True, known(evaluate(attr.expr, self.ctx, scope))
        except EvalError as e:
            self.problem(e.line or attr.line, where, e.message)
            return False, None
