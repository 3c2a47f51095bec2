"""What an expression is evaluated in: the context (`var`, `local`, the functions) and the
evaluator that for expressions, function calls and templates evaluate their parts with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

Function = Callable[[list[Any]], Any]


@dataclass
class Context:
    """What expressions see: `var`, `local` (evaluated on first use), the functions."""

    filename: str
    variables: dict[str, Any] = field(default_factory=dict)
    functions: Mapping[str, Function] = field(default_factory=dict)
    local_value: Callable[[str, int], Any] | None = None


class Evaluator(Protocol):
    """Expressions evaluated in a context with the names in scope."""

    @property
    def ctx(self) -> Context: ...

    def eval(self, node: Any) -> Any:
        """The value of `node`, a runtime interpolation kept as one."""
        ...

    def value(self, node: Any) -> Any:
        """The value of `node` for an operator: a runtime interpolation is an error."""
        ...

    def final(self, node: Any) -> Any:
        """The value of `node` with runtime interpolations as their text."""
        ...

    def sub(self, extra: Mapping[str, Any]) -> Evaluator:
        """This evaluator with the names in `extra` in scope as well."""
        ...
