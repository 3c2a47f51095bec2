"""Function calls: arguments evaluated (``...`` expands a list), then the context's function
table called. Three of Nomad's functions take expressions rather than values, and are
evaluated here: `try` and `can` catch their arguments' errors, `convert` reads a type."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Tree

from drover.jobspec.context import Evaluator
from drover.jobspec.errors import EvalError, FunctionError
from drover.jobspec.interpolation import known
from drover.jobspec.syntax import Node, name_of, parts
from drover.jobspec.typeexpr import type_of
from drover.jobspec.values import ConversionError, convert

# The functions of Nomad's map that are evaluated here rather than from the function table.
FORMS = ("try", "can", "convert")


def call(evaluator: Evaluator, node: Node) -> Any:
    names = [name_of(c) for c in node.children if isinstance(c, Tree) and c.data == "identifier"]
    name = "::".join(names)
    args_node = next((c for c in node.children if isinstance(c, Tree) and c.data == "arguments"), None)
    arg_nodes = [c for c in parts(args_node) if isinstance(c, Tree)] if args_node is not None else []
    expand = args_node is not None and any(
        isinstance(c, Token) and c.type == "ELLIPSIS" for c in args_node.children
    )
    if name in ("try", "can"):
        return _try(evaluator, name, arg_nodes, node.meta.line)
    if name == "convert":
        return _convert(evaluator, arg_nodes, node.meta.line)
    fn = evaluator.ctx.functions.get(name)
    if fn is None:
        raise EvalError(f'there is no function named "{name}"', node.meta.line)
    args = [known(evaluator.eval(a)) for a in arg_nodes]
    if expand:
        if not args or not isinstance(args[-1], list):
            raise EvalError(f"{name}: the argument before ... must be a list", node.meta.line)
        args = args[:-1] + args[-1]
    try:
        return fn(args)
    # A function handed values it cannot work with (a bad pattern, a mixed list to sort) is
    # the jobspec's problem, not the parser's.
    except (
        ConversionError,
        FunctionError,
        ValueError,
        TypeError,
        ArithmeticError,
        LookupError,
        re.error,
    ) as e:
        raise EvalError(f"{name}(): {e}", node.meta.line) from None


def _try(evaluator: Evaluator, name: str, arg_nodes: list[Node], line: int) -> Any:
    if name == "can":
        if len(arg_nodes) != 1:
            raise EvalError("can() takes one argument", line)
        try:
            evaluator.final(arg_nodes[0])
        except EvalError:
            return False
        return True
    if not arg_nodes:
        raise EvalError("try() needs at least one argument", line)
    last: EvalError | None = None
    for arg in arg_nodes:
        try:
            return evaluator.final(arg)
        except EvalError as e:
            last = e
    assert last is not None
    raise EvalError(f"try(): no argument could be evaluated; the last: {last.message}", line)


def _convert(evaluator: Evaluator, arg_nodes: list[Node], line: int) -> Any:
    if len(arg_nodes) != 2:
        raise EvalError("convert() takes a value and a type", line)
    value = known(evaluator.eval(arg_nodes[0]))
    try:
        return convert(value, type_of(arg_nodes[1], None))
    except ConversionError as e:
        raise EvalError(f"convert(): {e}", line) from None
    except EvalError as e:
        raise EvalError(f"convert(): {e.message}", line) from None
