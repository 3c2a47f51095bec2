"""Expressions evaluated as HCL evaluates them: references, operators, conditionals and
splats here; for expressions (drover.jobspec.forexpr), function calls (drover.jobspec.calls)
and string templates (drover.jobspec.templates) in rooms of their own. A reference only the
client can resolve is a runtime interpolation (drover.jobspec.interpolation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lark import Token, Tree

from drover.jobspec import templates
from drover.jobspec.calls import call
from drover.jobspec.context import Context
from drover.jobspec.errors import EvalError
from drover.jobspec.forexpr import for_object, for_tuple
from drover.jobspec.interpolation import RuntimeInterpolation
from drover.jobspec.syntax import Node, heredoc, name_of, parts, unescape
from drover.jobspec.values import ConversionError, number, to_bool, to_number, type_name


def evaluate(node: Any, ctx: Context, scope: Mapping[str, Any] | None = None) -> Any:
    """The value of expression `node`."""
    return _Evaluator(ctx, dict(scope or {})).eval(node)


class _Evaluator:
    """drover.jobspec.context's Evaluator: a method for each kind of expression node."""

    def __init__(self, ctx: Context, scope: dict[str, Any]) -> None:
        self.ctx = ctx
        self.scope = scope

    def eval(self, node: Any) -> Any:
        if isinstance(node, Token):
            raise EvalError(f"unexpected {str(node)!r}", node.line or 0)
        method = getattr(self, "_" + node.data, None)
        if method is None:
            raise EvalError(f"{node.data.replace('_', ' ')} is not supported", _line(node))
        try:
            return method(node)
        except (ConversionError, ValueError) as e:
            raise EvalError(str(e), _line(node)) from None

    def sub(self, extra: Mapping[str, Any]) -> _Evaluator:
        return _Evaluator(self.ctx, {**self.scope, **extra})

    # Terms

    def _expr_term(self, node: Node) -> Any:
        inner = [c for c in parts(node) if not isinstance(c, Token)]
        return self.eval(inner[0])

    def _int_lit(self, node: Node) -> Any:
        return int(str(node.children[0]))

    def _float_lit(self, node: Node) -> Any:
        return number(float(str(node.children[0])))

    def _literal_value(self, node: Node) -> Any:
        return {"true": True, "false": False, "null": None}[str(node.children[0])]

    def _string(self, node: Node) -> Any:
        return templates.render(self, [p for p in node.children if isinstance(p, Tree)])

    def _template_string(self, node: Node) -> Any:
        return unescape(str(node.children[0])[2:-2])

    def _heredoc_template(self, node: Node) -> Any:
        token = node.children[0]
        assert isinstance(token, Token)
        return self.eval(heredoc(token, self.ctx.filename))

    _heredoc_template_trim = _heredoc_template

    def _tuple(self, node: Node) -> Any:
        return [self.eval(c) for c in parts(node) if isinstance(c, Tree)]

    def _object(self, node: Node) -> Any:
        out: dict[str, Any] = {}
        for elem in (c for c in parts(node) if isinstance(c, Tree)):
            key_node, _, value_node = parts(elem)
            out[self.object_key(key_node)] = self.eval(value_node)
        return out

    def object_key(self, key_node: Node) -> str:
        inner = parts(key_node)[0]
        if inner.data == "keyword":
            return name_of(inner)
        if inner.data == "expr_term":
            term = [c for c in parts(inner) if not isinstance(c, Token)]
            if len(term) == 1 and term[0].data == "identifier" and len(parts(inner)) == 1:
                return name_of(term[0])
        key = self.eval(inner)
        if not isinstance(key, (str, int, float)) or isinstance(key, bool):
            raise EvalError(f"an object key must be a string, not a {type_name(key)}", _line(key_node))
        return str(templates.as_text(key))

    # References

    def _identifier(self, node: Node) -> Any:
        name = name_of(node)
        if name in self.scope:
            return self.scope[name]
        if name == "var":
            return self.ctx.variables
        if name == "local":
            raise EvalError("local must be followed by the name of a local value", _line(node))
        return RuntimeInterpolation(name)

    def _get_attr_expr_term(self, node: Node) -> Any:
        base_node, attr = node.children
        name = name_of(attr.children[-1])
        if _is_root(base_node, "local") and "local" not in self.scope and self.ctx.local_value:
            return self.ctx.local_value(name, _line(node))
        base = self.eval(base_node)
        if isinstance(base, RuntimeInterpolation):
            return base.then(f".{name}")
        if _is_root(base_node, "var") and "var" not in self.scope and name not in base:
            raise EvalError(
                f'there is no variable named "{name}" (declare it in a variable block)', _line(node)
            )
        return _get(base, name, _line(node))

    def _index_expr_term(self, node: Node) -> Any:
        base_node, index = node.children
        base = self.eval(base_node)
        key = self.index_key(index)
        if isinstance(base, RuntimeInterpolation):
            return base.then(f"[{key!r}]" if isinstance(key, str) else f"[{key}]")
        return _index(base, key, _line(node))

    def index_key(self, index: Node) -> Any:
        if index.data == "short_index":
            return int(str(index.children[-1]))
        return self.value(next(c for c in parts(index) if isinstance(c, Tree)))

    def _attr_splat_expr_term(self, node: Node) -> Any:
        return self._splat(node)

    _full_splat_expr_term = _attr_splat_expr_term

    def _splat(self, node: Node) -> Any:
        base = self.eval(node.children[0])
        steps = [c for c in node.children[1].children if isinstance(c, Tree)]
        items = [] if base is None else base if isinstance(base, list) else [base]
        out = []
        for item in items:
            for step in steps:
                if step.data == "get_attr":
                    item = _get(item, name_of(step.children[-1]), _line(node))
                else:
                    item = _index(item, self.index_key(step), _line(node))
            out.append(item)
        return out

    # Operators

    def _conditional(self, node: Node) -> Any:
        cond, then, other = (c for c in parts(node) if isinstance(c, Tree))
        return self.eval(then) if to_bool(self.value(cond)) else self.eval(other)

    def _binary_op(self, node: Node) -> Any:
        left_node, term = (c for c in parts(node) if isinstance(c, Tree))
        op_node, right_node = (c for c in parts(term) if isinstance(c, Tree))
        op = str(op_node.children[0]).strip()
        if op in ("&&", "||"):
            left = to_bool(self.value(left_node))
            if (op == "&&" and not left) or (op == "||" and left):
                return left
            return to_bool(self.value(right_node))
        return _binary(op, self.value(left_node), self.value(right_node))

    def _unary_op(self, node: Node) -> Any:
        op, operand = node.children
        value = self.value(operand)
        if str(op) == "!":
            return not to_bool(value)
        return number(-to_number(value))

    def value(self, node: Any) -> Any:
        """A value for an operator: a runtime interpolation cannot be computed with."""
        value = self.eval(node)
        if isinstance(value, RuntimeInterpolation):
            raise EvalError(
                f"{value.text()} is only known at runtime and cannot be computed with here", _line(node)
            )
        return value

    # For expressions and function calls

    def _for_tuple_expr(self, node: Node) -> Any:
        return for_tuple(self, node)

    def _for_object_expr(self, node: Node) -> Any:
        return for_object(self, node)

    def _function_call(self, node: Node) -> Any:
        return call(self, node)

    def final(self, node: Any) -> Any:
        """The value of `node` with runtime interpolations as their text."""
        value = self.eval(node)
        return value.text() if isinstance(value, RuntimeInterpolation) else value


def _is_root(node: Node, name: str) -> bool:
    return (
        node.data == "expr_term"
        and len(node.children) == 1
        and isinstance(node.children[0], Tree)
        and node.children[0].data == "identifier"
        and name_of(node.children[0]) == name
    )


def _line(node: Any) -> int:
    if isinstance(node, Token):
        return node.line or 0
    return getattr(node.meta, "line", 0) if not node.meta.empty else 0


def _get(base: Any, name: str, line: int) -> Any:
    if isinstance(base, dict):
        if name not in base:
            raise EvalError(f'this object has no attribute named "{name}"', line)
        return base[name]
    raise EvalError(f'cannot read attribute "{name}" of a {type_name(base)}', line)


def _index(base: Any, key: Any, line: int) -> Any:
    if isinstance(base, list):
        try:
            i = int(to_number(key))
        except ConversionError:
            raise EvalError(f"a list index must be a number, not {key!r}", line) from None
        if not 0 <= i < len(base):
            raise EvalError(f"index {i} is out of range for a list of {len(base)}", line)
        return base[i]
    if isinstance(base, dict):
        if str(templates.as_text(key)) not in base:
            raise EvalError(f"this map has no element for the key {key!r}", line)
        return base[str(templates.as_text(key))]
    raise EvalError(f"a {type_name(base)} cannot be indexed", line)


def _binary(op: str, left: Any, right: Any) -> Any:
    if op == "==":
        return bool(left == right and type_name(left) == type_name(right))
    if op == "!=":
        return not (left == right and type_name(left) == type_name(right))
    a, b = to_number(left), to_number(right)
    if op == "+":
        return number(a + b)
    if op == "-":
        return number(a - b)
    if op == "*":
        return number(a * b)
    if op in ("/", "%") and b == 0:
        raise ConversionError("division by zero")
    if op == "/":
        return number(a // b if isinstance(a, int) and isinstance(b, int) and a % b == 0 else a / b)
    if op == "%":
        return number(a - b * int(a / b))
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
