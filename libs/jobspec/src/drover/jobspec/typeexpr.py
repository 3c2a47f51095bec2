"""Type constraint expressions (``string``, ``list(string)``, ``object({a = optional(number,
1)})``...) read into drover.jobspec.values' types, for a variable's `type` and convert()."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lark import Tree

from drover.jobspec.errors import EvalError
from drover.jobspec.syntax import Node, name_of, parts
from drover.jobspec.values import Type

_PRIMITIVES = {"string", "number", "bool", "any"}

# The value of an optional attribute's default expression; None where defaults are not allowed.
Defaults = Callable[[Node], Any] | None


def type_of(node: Any, defaults: Defaults) -> Type:
    """The type constraint `node` writes; an optional attribute's default evaluated with
    `defaults` (convert()'s type takes none, as HCL's)."""
    term = next(c for c in parts(node) if isinstance(c, Tree)) if node.data == "expr_term" else node
    if term.data == "identifier" and name_of(term) in _PRIMITIVES:
        return (name_of(term),)
    if term.data == "function_call":
        kind = name_of(term.children[0])
        args_node = next((c for c in term.children if isinstance(c, Tree) and c.data == "arguments"), None)
        args = [c for c in parts(args_node) if isinstance(c, Tree)] if args_node is not None else []
        if kind in ("list", "set", "map") and len(args) == 1:
            return (kind, type_of(args[0], defaults))
        if kind == "tuple" and len(args) == 1:
            tup = next(c for c in parts(args[0]) if isinstance(c, Tree))
            return ("tuple", [type_of(e, defaults) for e in parts(tup) if isinstance(e, Tree)])
        if kind == "object" and len(args) == 1:
            return _object_type(args[0], defaults)
    raise EvalError("not a type (use string, number, bool, any, list(...), map(...), object({...})...)")


def _object_type(node: Any, defaults: Defaults) -> Type:
    obj = next(c for c in parts(node) if isinstance(c, Tree))
    attrs: dict[str, Type] = {}
    values: dict[str, Any] = {}
    for elem in (c for c in parts(obj) if isinstance(c, Tree)):
        key, _, value = parts(elem)
        name = name_of(next(c for c in parts(parts(key)[0]) if isinstance(c, Tree)))
        term = next(c for c in parts(value) if isinstance(c, Tree))
        if term.data == "function_call" and name_of(term.children[0]) == "optional":
            args = [c for c in parts(term.children[-2]) if isinstance(c, Tree)]
            attrs[name] = type_of(args[0], defaults)
            if len(args) > 1 and defaults is None:
                raise EvalError("an optional attribute takes only its type here, no default")
            values[name] = defaults(args[1]) if len(args) > 1 and defaults is not None else None
        else:
            attrs[name] = type_of(value, defaults)
    return ("object", attrs, values)
