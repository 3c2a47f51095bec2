"""The expressions a filter parses into: match expressions joined by `and`, `or`, `not`, and
go-bexpr's collection expressions (`any Tags as t { t == "x" }`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import regex


class FilterError(ValueError):
    """A filter that does not parse (with the column it fails at) or cannot be evaluated
    against a document (an operator on a value it does not apply to)."""


class Op(Enum):
    EQUAL = "=="
    NOT_EQUAL = "!="
    IN = "in"  # `v in S` and `S contains v` alike, as go-bexpr reads them
    NOT_IN = "not in"
    IS_EMPTY = "is empty"
    IS_NOT_EMPTY = "is not empty"
    IS_NIL = "is nil"
    IS_NOT_NIL = "is not nil"
    MATCHES = "matches"
    NOT_MATCHES = "not matches"


# What each operator answers for a selector that names nothing (a map's missing key):
# go-bexpr's NotPresentDisposition - nothing equals, contains or matches what is missing.
NOT_PRESENT = {
    Op.EQUAL: False,
    Op.NOT_EQUAL: True,
    Op.IN: False,
    Op.NOT_IN: True,
    Op.IS_EMPTY: True,
    Op.IS_NOT_EMPTY: False,
    Op.IS_NIL: True,
    Op.IS_NOT_NIL: False,
    Op.MATCHES: False,
    Op.NOT_MATCHES: True,
}


@dataclass(frozen=True)
class Selector:
    """A path into the document: map keys and list indexes (`Meta.owner`, `Meta["a.b"]`,
    `"/Meta/a.b"` as a JSON pointer)."""

    path: tuple[str, ...]
    pointer: bool = False

    def __str__(self) -> str:
        return ("/" if self.pointer else ".").join(self.path)


@dataclass(frozen=True)
class Match:
    selector: Selector
    op: Op
    # The value as written (a number, string, or bare word), coerced to the type of what the
    # selector finds when evaluated, as go-bexpr does.
    value: str | None = None
    pattern: regex.Pattern[str] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Not:
    operand: Expression


@dataclass(frozen=True)
class And:
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Or:
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Collection:
    """`any|all <selector> as <binding> { <expression> }`: over a list's elements or a map's
    keys. `index` names the element's index (a map's key), `value` the element (a map's
    value); a lone name is the element of a list and the key of a map."""

    all: bool
    selector: Selector
    inner: Expression
    lone: str = ""
    index: str = ""
    value: str = ""


Expression = Match | Not | And | Or | Collection
