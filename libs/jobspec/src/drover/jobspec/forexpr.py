"""For expressions: ``[for k, v in coll : expr if cond]`` and ``{for k, v in coll : k => v...}``.
Maps are iterated in key order, as HCL iterates them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lark import Token, Tree

from drover.jobspec.context import Evaluator
from drover.jobspec.errors import EvalError
from drover.jobspec.syntax import Node, name_of, parts
from drover.jobspec.templates import as_text
from drover.jobspec.values import to_bool, type_name


def _scopes(evaluator: Evaluator, node: Node) -> Iterator[tuple[Evaluator, list[Node]]]:
    """Each element's evaluator (its names bound) and the expressions after the intro."""
    trees = [c for c in parts(node) if isinstance(c, Tree)]
    intro, rest = trees[0], trees[1:]
    intro_trees = [c for c in parts(intro) if isinstance(c, Tree)]
    names = [name_of(t) for t in intro_trees[:-1]]
    collection = evaluator.value(intro_trees[-1])
    pairs: list[tuple[Any, Any]]
    if isinstance(collection, dict):
        pairs = sorted(collection.items())
    elif isinstance(collection, list):
        pairs = list(enumerate(collection))
    else:
        raise EvalError(f"a for expression cannot iterate over a {type_name(collection)}", node.meta.line)
    cond = rest[-1] if rest and rest[-1].data == "for_cond" else None
    body = [t for t in rest if t is not cond]
    for key, value in pairs:
        scope = {names[0]: key, names[1]: value} if len(names) == 2 else {names[0]: value}
        sub = evaluator.sub(scope)
        if cond is not None:
            test = next(c for c in parts(cond) if isinstance(c, Tree))
            if not to_bool(sub.value(test)):
                continue
        yield sub, body


def for_tuple(evaluator: Evaluator, node: Node) -> list[Any]:
    return [sub.eval(body[0]) for sub, body in _scopes(evaluator, node)]


def for_object(evaluator: Evaluator, node: Node) -> dict[str, Any]:
    grouped = any(isinstance(c, Token) and c.type == "ELLIPSIS" for c in node.children)
    out: dict[str, Any] = {}
    for sub, body in _scopes(evaluator, node):
        key = sub.value(body[0])
        if not isinstance(key, (str, int, float)) or isinstance(key, bool):
            raise EvalError(f"an object key must be a string, not a {type_name(key)}", node.meta.line)
        text = as_text(key)
        value = sub.eval(body[1])
        if grouped:
            out.setdefault(text, []).append(value)
        elif text in out:
            raise EvalError(f'duplicate key "{text}" (add ... after the value to group them)', node.meta.line)
        else:
            out[text] = value
    return out
