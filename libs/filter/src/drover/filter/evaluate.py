"""A parsed filter evaluated against a JSON document (dicts, lists, strings, numbers, booleans,
None), as go-bexpr evaluates one against Nomad's objects:

- a selector walks map keys and list indexes; a key a map lacks names nothing, and each
  operator answers for nothing as go-bexpr's NotPresentDisposition says (`==` false, `!=`
  true, `is empty` true, ...). JSON null is taken as nothing too (Nomad's nil maps and
  slices), and so is a path through it;
- the value written is coerced to the type of what the selector finds: a boolean (Go's
  ParseBool: true, True, TRUE, t, 1, ...), an integer (any base Go's ParseInt reads: 0x1f), a
  float, or the string as written;
- `in`/`contains` over a list: any element equal (elements the value cannot be coerced to are
  skipped); over a map: the value is one of its keys; over a string: a substring;
- `is empty` on a list, map or string; `matches` (a regular expression, searched) on a string,
  given REGEX_TIMEOUT seconds.

An operator on a value it does not apply to (`contains` on a number, `matches` on a list, a
field of a string) is a FilterError, which an API answers with a 400 as Nomad does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drover.filter.ast import (
    NOT_PRESENT,
    And,
    Collection,
    Expression,
    FilterError,
    Match,
    Not,
    Op,
    Or,
    Selector,
)

_MISSING = object()
# Go's regular expressions (RE2) run in linear time; Python's backtrack, and a pattern such as
# `(a|aa)+c` would hold a request for minutes: a match taking longer is a problem instead.
REGEX_TIMEOUT = 0.1
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
Scope = Mapping[str, Any]


def evaluate(expr: Expression, doc: Any, scope: Scope | None = None) -> bool:
    """Whether `doc` satisfies `expr`; `scope` holds the names a collection binds."""
    scope = scope or {}
    if isinstance(expr, Match):
        return _match(expr, doc, scope)
    if isinstance(expr, And):
        return evaluate(expr.left, doc, scope) and evaluate(expr.right, doc, scope)
    if isinstance(expr, Or):
        return evaluate(expr.left, doc, scope) or evaluate(expr.right, doc, scope)
    if isinstance(expr, Not):
        return not evaluate(expr.operand, doc, scope)
    return _collection(expr, doc, scope)


def select(doc: Any, selector: Selector, scope: Scope) -> Any:
    """What `selector` names in `doc` (or the scope's bound names), _MISSING for nothing."""
    path = selector.path
    value = doc
    if path and not selector.pointer and path[0] in scope:
        value, path = scope[path[0]], path[1:]
    for n, part in enumerate(path):
        if value is None:
            return _MISSING
        if isinstance(value, Mapping):
            value = value.get(part, _MISSING)
            if value is _MISSING:
                return _MISSING
        elif isinstance(value, list):
            if not part.isdigit():
                raise FilterError(
                    f"{_shown(selector, n)} is a list: select an element by its index, or use any/all"
                )
            index = int(part)
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            raise FilterError(f"{_shown(selector, n)} is {_type(value)}: it has no field {part!r}")
    return value


def _shown(selector: Selector, n: int) -> str:
    return str(Selector(selector.path[:n], selector.pointer)) or "the document"


def _type(value: Any) -> str:
    """What `value` is, with its article ("a list", "an integer")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def coerce(raw: str, like: Any) -> Any:
    """The value written, as the type of `like`; ValueError if it cannot be."""
    if isinstance(like, bool):
        if raw in _TRUE:
            return True
        if raw in _FALSE:
            return False
        raise ValueError(f"{raw!r} is not a boolean")
    if isinstance(like, int):
        try:
            return int(raw, 0)  # Go's base prefixes: 0x1f, 0o17, 0b101
        except ValueError:
            return int(raw)  # a leading zero (Go would read it as octal)
    if isinstance(like, float):
        return float(raw)
    return raw


def _equal(raw: str, value: Any, selector: Selector) -> bool:
    if isinstance(value, (Mapping, list)):
        raise FilterError(f"{selector} is {_type(value)}: == and != compare a string, number or boolean")
    try:
        return bool(coerce(raw, value) == value)
    except ValueError as e:
        raise FilterError(f"{selector}: {e} (it holds {_type(value)})") from None


def _contains(raw: str, value: Any, selector: Selector) -> bool:
    if isinstance(value, str):
        return raw in value
    if isinstance(value, Mapping):
        return raw in value
    if isinstance(value, list):
        for item in value:
            if item is None or isinstance(item, (Mapping, list)):
                continue
            try:
                if coerce(raw, item) == item:
                    return True
            except ValueError:
                continue
        return False
    raise FilterError(f"{selector} is {_type(value)}: in and contains need a list, map or string")


def _match(m: Match, doc: Any, scope: Scope) -> bool:
    value = select(doc, m.selector, scope)
    if value is _MISSING or value is None:
        return NOT_PRESENT[m.op]
    op = m.op
    if op in (Op.IS_NIL, Op.IS_NOT_NIL):
        return op is Op.IS_NOT_NIL
    if op in (Op.IS_EMPTY, Op.IS_NOT_EMPTY):
        if not isinstance(value, (str, Mapping, list)):
            raise FilterError(f"{m.selector} is {_type(value)}: is empty needs a list, map or string")
        return (len(value) == 0) == (op is Op.IS_EMPTY)
    raw = m.value if m.value is not None else ""
    if op in (Op.EQUAL, Op.NOT_EQUAL):
        return _equal(raw, value, m.selector) == (op is Op.EQUAL)
    if op in (Op.IN, Op.NOT_IN):
        return _contains(raw, value, m.selector) == (op is Op.IN)
    if not isinstance(value, str):
        raise FilterError(f"{m.selector} is {_type(value)}: matches needs a string")
    assert m.pattern is not None
    try:
        found = m.pattern.search(value, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        raise FilterError(f"{m.selector}: the regular expression {m.value!r} took too long") from None
    return (found is not None) == (op is Op.MATCHES)


def _collection(c: Collection, doc: Any, scope: Scope) -> bool:
    found = select(doc, c.selector, scope)
    if found is _MISSING or found is None:
        return c.all
    if isinstance(found, Mapping):
        pairs: list[tuple[Any, Any]] = list(found.items())
        lone_is_key = True
    elif isinstance(found, list):
        pairs = list(enumerate(found))
        lone_is_key = False
    else:
        raise FilterError(f"{c.selector} is {_type(found)}: any and all go over a list or map")
    for index, item in pairs:
        inner = dict(scope)
        if c.lone:
            inner[c.lone] = index if lone_is_key else item
        if c.index:
            inner[c.index] = index
        if c.value:
            inner[c.value] = item
        held = evaluate(c.inner, doc, inner)
        if held != c.all:
            return held
    return c.all
