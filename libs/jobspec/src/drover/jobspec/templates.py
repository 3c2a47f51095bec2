"""String templates: literal text, ``${...}`` interpolations and ``%{ if }`` / ``%{ for }``
directives (with their ``~`` strip markers), as HCL renders them."""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from drover.jobspec.context import Evaluator
from drover.jobspec.errors import EvalError
from drover.jobspec.interpolation import RuntimeInterpolation
from drover.jobspec.syntax import Node, name_of, parts, unescape
from drover.jobspec.values import ConversionError, to_bool, to_string, type_name

Item = list[Any]  # [kind, ...]


def as_text(value: Any) -> str:
    """A value interpolated into a string."""
    if isinstance(value, RuntimeInterpolation):
        return value.text()
    try:
        return to_string(value)
    except ConversionError:
        raise ConversionError(f"a {type_name(value)} cannot be interpolated into a string") from None


def render(evaluator: Evaluator, string_parts: list[Node]) -> Any:
    """The value of a quoted template: a single interpolation keeps its value's type."""
    if len(string_parts) == 1 and isinstance(string_parts[0].children[0], Tree):
        only = string_parts[0].children[0]
        if only.data == "interpolation":
            return evaluator.eval(_inner(only))
    items = _strip(_items(string_parts))
    out, rest = _render(evaluator, items, 0, ())
    if rest < len(items):
        raise EvalError(f"%{{ {items[rest][0]} }} without its opening directive", items[rest][-1])
    return out


def _inner(node: Node) -> Node:
    return next(c for c in parts(node) if isinstance(c, Tree))


def _items(string_parts: list[Node]) -> list[Item]:
    items: list[Item] = []
    for part in string_parts:
        child = part.children[0]
        if isinstance(child, Token):
            items.append(["lit", unescape(str(child))])
            continue
        toks = [c for c in child.children if isinstance(c, Token)]
        line = child.meta.line if not child.meta.empty else 0
        left = len(toks) > 1 and toks[1].type == "STRIP_MARKER"
        right = len(toks) > 1 and toks[-2].type == "STRIP_MARKER"
        trees = [c for c in child.children if isinstance(c, Tree)]
        kind = child.data.removeprefix("template_").removesuffix("_start")
        if kind == "interpolation":
            items.append(["expr", trees[0], False, False, line])
        elif kind == "for":
            names = [name_of(t) for t in trees if t.data == "identifier"]
            items.append(["for", names, trees[-1], left, right, line])
        else:
            items.append([kind, trees[0] if trees else None, left, right, line])
    return items


def _strip(items: list[Item]) -> list[Item]:
    for i, item in enumerate(items):
        if item[0] == "lit":
            continue
        left, right = item[-3], item[-2]
        if left and i > 0 and items[i - 1][0] == "lit":
            items[i - 1][1] = items[i - 1][1].rstrip()
        if right and i + 1 < len(items) and items[i + 1][0] == "lit":
            items[i + 1][1] = items[i + 1][1].lstrip()
    return items


def _render(evaluator: Evaluator, items: list[Item], i: int, stop: tuple[str, ...]) -> tuple[str, int]:
    """Render from `i` up to a directive in `stop`; returns the text and where it stopped."""
    out: list[str] = []
    while i < len(items):
        item = items[i]
        kind = item[0]
        if kind in stop:
            return "".join(out), i
        if kind == "lit":
            out.append(item[1])
            i += 1
        elif kind == "expr":
            out.append(as_text(evaluator.eval(item[1])))
            i += 1
        elif kind == "if":
            text, i = _render_if(evaluator, items, i)
            out.append(text)
        elif kind == "for":
            text, i = _render_for(evaluator, items, i)
            out.append(text)
        else:
            return "".join(out), i
    return "".join(out), i


def _expect(items: list[Item], i: int, kinds: tuple[str, ...], opened: Item) -> None:
    if i >= len(items) or items[i][0] not in kinds:
        raise EvalError(f"%{{ {opened[0]} }} is not closed by %{{ end{opened[0]} }}", opened[-1])


def _render_if(evaluator: Evaluator, items: list[Item], i: int) -> tuple[str, int]:
    opened = items[i]
    cond = to_bool(evaluator.value(opened[1]))
    then, j = (
        _render(evaluator, items, i + 1, ("else", "endif"))
        if cond
        else _skip(items, i + 1, ("else", "endif"))
    )
    _expect(items, j, ("else", "endif"), opened)
    other = ""
    if items[j][0] == "else":
        other, j = _skip(items, j + 1, ("endif",)) if cond else _render(evaluator, items, j + 1, ("endif",))
        _expect(items, j, ("endif",), opened)
    return (then if cond else other), j + 1


def _render_for(evaluator: Evaluator, items: list[Item], i: int) -> tuple[str, int]:
    opened = items[i]
    names, collection = opened[1], evaluator.value(opened[2])
    pairs: list[tuple[Any, Any]]
    if isinstance(collection, dict):
        pairs = sorted(collection.items())
    elif isinstance(collection, list):
        pairs = list(enumerate(collection))
    else:
        raise EvalError(f"%{{ for }} cannot iterate over a {type_name(collection)}", opened[-1])
    _, end = _skip(items, i + 1, ("endfor",))
    _expect(items, end, ("endfor",), opened)
    out = []
    for key, value in pairs:
        scope = {names[0]: key, names[1]: value} if len(names) == 2 else {names[0]: value}
        text, _ = _render(evaluator.sub(scope), items[i + 1 : end], 0, ())
        out.append(text)
    return "".join(out), end + 1


def _skip(items: list[Item], i: int, stop: tuple[str, ...]) -> tuple[str, int]:
    """Pass over a branch not taken, minding nested directives."""
    depth = 0
    while i < len(items):
        kind = items[i][0]
        if depth == 0 and kind in stop:
            return "", i
        if kind in ("if", "for"):
            depth += 1
        elif kind in ("endif", "endfor"):
            depth -= 1
        i += 1
    return "", i
