"""Nomad's `filter=` expressions (go-bexpr's syntax), pure: no I/O.

    f = Filter.parse('Status == "running" and "web" in Tags')   # FilterError, with the column
    f.matches({"Status": "running", ...})                             # FilterError if it cannot apply
    f.keep(docs)

`drover.filter.parser` holds the grammar, `drover.filter.evaluate` how each operator reads a
JSON document."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from drover.filter.ast import Expression, FilterError, Op, Selector
from drover.filter.evaluate import evaluate
from drover.filter.parser import parse

T = TypeVar("T")


@dataclass(frozen=True)
class Filter:
    """A parsed filter and the text it was parsed from."""

    text: str
    expression: Expression

    @classmethod
    def parse(cls, text: str) -> Filter:
        return cls(text, parse(text))

    def matches(self, doc: Any) -> bool:
        return evaluate(self.expression, doc)

    def keep(self, docs: Iterable[T]) -> list[T]:
        return [d for d in docs if evaluate(self.expression, d)]


__all__ = ["Expression", "Filter", "FilterError", "Op", "Selector", "evaluate", "parse"]
