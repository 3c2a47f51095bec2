"""The executor of a parsed template, as Go's text/template/exec: dot and variables, fields,
method calls and map keys, function calls with Go's argument checks, pipelines, if/with/range
(with break and continue) and template invocation; errors carry the node's line and column."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from drover.template.errors import ExecError, TemplateError, line_and_column
from drover.template.nodes import (
    ActionNode,
    BoolNode,
    BranchNode,
    BreakNode,
    ChainNode,
    CommandNode,
    ContinueNode,
    DotNode,
    FieldNode,
    IdentifierNode,
    ListNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    StringNode,
    TemplateNode,
    TextNode,
    VariableNode,
)
from drover.template.registry import ANY, BOOL, FLOAT, INT, LIST, MAP, STRING, STRINGS, Function
from drover.template.values import NO_VALUE, format_value, go_type, is_true, sorted_keys

if TYPE_CHECKING:
    from drover.template.context import Call
    from drover.template.parser import Tree

MAX_DEPTH = 100
_MISSING: Any = object()  # no final (piped) argument


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def ideal_constant(node: NumberNode) -> Any:
    """A numeric constant where any type will do: a float if written as one, else an int."""
    text = node.text
    hex_int = text.lstrip("+-")[:2] in ("0x", "0X") and "p" not in text.lower()
    if node.is_float and not hex_int and not node.is_char and any(c in text for c in ".eEpP"):
        return node.float_value
    if node.is_int:
        return node.int_value
    raise ValueError(f"{text} overflows int")


class Executor:
    def __init__(
        self,
        name: str,
        text: str,
        trees: dict[str, Tree],
        functions: dict[str, Function],
        call: Call,
        missing_key_error: bool = False,
    ) -> None:
        self.name = name
        self.text = text
        self.trees = trees
        self.functions = functions
        self.call = call
        self.missing_key_error = missing_key_error
        self.out: list[str] = []
        self.vars: list[list[Any]] = []
        self.node: Node | None = None
        self.tree_name = name
        self.depth = 0

    # --- errors ----------------------------------------------------------------------------

    def error(self, message: str) -> ExecError:
        node = self.node
        if node is None:
            return ExecError(f"template: {self.tree_name}: {message}", self.name)
        line, col = line_and_column(self.text, node.pos)
        context = str(node)
        if len(context) > 20:
            context = context[:20] + "..."
        return ExecError(
            f'template: {self.name}:{line}:{col}: executing "{self.tree_name}" at <{context}>: {message}',
            self.name,
            line,
            col,
        )

    def at(self, node: Node) -> None:
        self.node = node

    # --- variables -------------------------------------------------------------------------

    def push(self, name: str, value: Any) -> None:
        self.vars.append([name, value])

    def set_var(self, name: str, value: Any) -> None:
        for var in reversed(self.vars):
            if var[0] == name:
                var[1] = value
                return
        raise self.error(f"undefined variable: {name}")

    def var_value(self, name: str) -> Any:
        for var in reversed(self.vars):
            if var[0] == name:
                return var[1]
        raise self.error(f"undefined variable: {name}")

    # --- walking ---------------------------------------------------------------------------

    def execute(self, data: Any) -> str:
        tree = self.trees.get(self.name)
        if tree is None:
            raise ExecError(
                f'template: {self.name}: "{self.name}" is an incomplete or empty template', self.name
            )
        if data is None:
            data = NO_VALUE  # Go's Execute with nil data: dot is the invalid value
        self.vars = [["$", data]]
        self.walk(data, tree.root)
        return "".join(self.out)

    def walk(self, dot: Any, node: Node) -> None:
        self.at(node)
        if isinstance(node, TextNode):
            self.out.append(node.text)
        elif isinstance(node, ActionNode):
            value = self.eval_pipeline(dot, node.pipe)
            if not node.pipe.decl:
                self.print_value(node, value)
        elif isinstance(node, ListNode):
            for n in node.nodes:
                self.walk(dot, n)
        elif isinstance(node, BranchNode):
            mark = len(self.vars)
            try:
                if node.keyword == "range":
                    self.walk_range(dot, node)
                else:
                    self.walk_if_or_with(dot, node)
            finally:
                del self.vars[mark:]
        elif isinstance(node, TemplateNode):
            self.walk_template(dot, node)
        elif isinstance(node, BreakNode):
            raise _Break
        elif isinstance(node, ContinueNode):
            raise _Continue
        else:
            raise self.error(f"unknown node: {node}")

    def print_value(self, node: Node, value: Any) -> None:
        self.at(node)
        if callable(value) and not getattr(type(value), "go_stringer", False):
            raise self.error(f"can't print {node} of type {go_type(value)}")
        self.out.append(format_value(value, top=True))

    def walk_if_or_with(self, dot: Any, node: BranchNode) -> None:
        value = self.eval_pipeline(dot, node.pipe)
        if is_true(value):
            self.walk(value if node.keyword == "with" else dot, node.body)
        elif node.else_body is not None:
            self.walk(dot, node.else_body)

    def walk_range(self, dot: Any, node: BranchNode) -> None:
        self.at(node)
        value = self.eval_pipeline(dot, node.pipe)
        mark = len(self.vars)
        decl = node.pipe.decl
        items: list[tuple[Any, Any]]
        if isinstance(value, list | tuple):
            items = list(enumerate(value))
        elif isinstance(value, dict):
            items = [(k, value[k]) for k in sorted_keys(value)]
        elif isinstance(value, int) and not isinstance(value, bool):
            if len(decl) > 1:
                raise self.error(f"can't use {value} to iterate over more than one variable")
            items = [(i, i) for i in range(value)]
        elif value is NO_VALUE or value is None:
            items = []
        else:
            raise self.error(f"range can't iterate over {format_value(value)}")
        for index, elem in items:
            if decl:
                if node.pipe.is_assign:
                    self.set_var(decl[0].idents[0], index if len(decl) > 1 else elem)
                    if len(decl) > 1:
                        self.set_var(decl[1].idents[0], elem)
                else:
                    self.vars[-1][1] = elem
                    if len(decl) > 1:
                        self.vars[-2][1] = index
            try:
                self.walk(elem, node.body)
            except _Continue:
                pass
            except _Break:
                break
            finally:
                del self.vars[mark:]
        if not items and node.else_body is not None:
            self.walk(dot, node.else_body)

    def walk_template(self, dot: Any, node: TemplateNode) -> None:
        self.at(node)
        tree = self.trees.get(node.name)
        if tree is None:
            raise self.error(f'template "{node.name}" not defined')
        if self.depth >= MAX_DEPTH:
            raise self.error(f"exceeded maximum template depth ({MAX_DEPTH})")
        new_dot = self.eval_pipeline(dot, node.pipe) if node.pipe is not None else NO_VALUE
        saved = self.vars, self.tree_name
        self.vars, self.tree_name = [["$", new_dot]], node.name
        self.depth += 1
        try:
            self.walk(new_dot, tree.root)
        finally:
            self.depth -= 1
            self.vars, self.tree_name = saved

    # --- pipelines and commands ------------------------------------------------------------

    def eval_pipeline(self, dot: Any, pipe: PipeNode) -> Any:
        self.at(pipe)
        value: Any = _MISSING
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
            if value is None:
                value = NO_VALUE  # Go digs a nil out of its interface: an invalid value
        for var in pipe.decl:
            if pipe.is_assign:
                self.set_var(var.idents[0], value)
            else:
                self.push(var.idents[0], value)
        return value

    def not_a_function(self, args: list[Node], final: Any) -> None:
        if len(args) > 1 or final is not _MISSING:
            raise self.error(f"can't give argument to non-function {args[0]}")

    def eval_command(self, dot: Any, cmd: CommandNode, final: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, FieldNode):
            return self.eval_field_chain(dot, dot, first, first.idents, cmd.args, final)
        if isinstance(first, ChainNode):
            return self.eval_chain(dot, first, cmd.args, final)
        if isinstance(first, IdentifierNode):
            return self.eval_function(dot, first, cmd, cmd.args, final)
        if isinstance(first, PipeNode):
            self.not_a_function(cmd.args, final)
            return self.eval_pipeline(dot, first)
        if isinstance(first, VariableNode):
            return self.eval_variable(dot, first, cmd.args, final)
        self.at(first)
        self.not_a_function(cmd.args, final)
        if isinstance(first, BoolNode):
            return first.value
        if isinstance(first, DotNode):
            return dot
        if isinstance(first, NilNode):
            raise self.error("nil is not a command")
        if isinstance(first, NumberNode):
            try:
                return ideal_constant(first)
            except ValueError as e:
                raise self.error(str(e)) from None
        if isinstance(first, StringNode):
            return first.text
        raise self.error(f"can't evaluate command {first}")

    def eval_variable(self, dot: Any, node: VariableNode, args: list[Node], final: Any) -> Any:
        self.at(node)
        value = self.var_value(node.idents[0])
        if len(node.idents) == 1:
            self.not_a_function(args, final)
            return value
        return self.eval_field_chain(dot, value, node, node.idents[1:], args, final)

    def eval_chain(self, dot: Any, node: ChainNode, args: list[Node], final: Any) -> Any:
        self.at(node)
        if isinstance(node.node, NilNode):
            raise self.error(f"indirection through explicit nil in {node}")
        receiver = self.eval_arg(dot, ANY, node.node)
        return self.eval_field_chain(dot, receiver, node, node.fields, args, final)

    def eval_field_chain(
        self, dot: Any, receiver: Any, node: Node, idents: list[str], args: list[Node], final: Any
    ) -> Any:
        for ident in idents[:-1]:
            receiver = self.eval_field(dot, ident, node, [], _MISSING, receiver)
        return self.eval_field(dot, idents[-1], node, args, final, receiver)

    def eval_field(self, dot: Any, name: str, node: Node, args: list[Node], final: Any, receiver: Any) -> Any:
        self.at(node)
        if receiver is NO_VALUE:
            if self.missing_key_error:
                raise self.error(f'nil data; no entry for key "{name}"')
            return NO_VALUE
        if receiver is None:
            raise self.error(f"nil pointer evaluating interface {{}}.{name}")
        has_args = len(args) > 1 or final is not _MISSING
        member = _exported_member(receiver, name)
        if member is not None:
            if callable(member):
                fn = _method_function(member)
                return self.eval_call(dot, fn, node, name, args, final)
            if has_args:
                raise self.error(f"{name} has arguments but cannot be invoked as function")
            return member
        if isinstance(receiver, dict):
            if has_args:
                raise self.error(f"{name} is not a method but has arguments")
            if name in receiver:
                return receiver[name]
            if self.missing_key_error:
                raise self.error(f'map has no entry for key "{name}"')
            return NO_VALUE
        raise self.error(f"can't evaluate field {name} in type {go_type(receiver)}")

    def eval_function(self, dot: Any, node: IdentifierNode, cmd: Node, args: list[Node], final: Any) -> Any:
        self.at(node)
        fn = self.functions.get(node.name)
        if fn is None:
            raise self.error(f'"{node.name}" is not a defined function')
        if node.name in ("and", "or"):
            return self.eval_and_or(dot, node.name, args[1:], final)
        return self.eval_call(dot, fn, cmd, node.name, args, final)

    def eval_and_or(self, dot: Any, name: str, args: list[Node], final: Any) -> Any:
        if not args and final is _MISSING:
            raise self.error(f"wrong number of args for {name}: want at least 1 got 0")
        value: Any = NO_VALUE
        for arg in args:
            value = self.eval_arg(dot, ANY, arg)
            if is_true(value) == (name == "or"):
                return value
        if final is not _MISSING:
            value = final
        return value

    def eval_call(self, dot: Any, fn: Function, node: Node, name: str, args: list[Node], final: Any) -> Any:
        given = args[1:]
        count = len(given) + (0 if final is _MISSING else 1)
        fixed = len(fn.params)
        if fn.variadic is not None:
            if count < fixed:
                raise self.error(f"wrong number of args for {name}: want at least {fixed} got {len(given)}")
        elif count != fixed:
            raise self.error(f"wrong number of args for {name}: want {fixed} got {count}")
        values: list[Any] = []
        for i, arg in enumerate(given):
            kind = fn.params[i] if i < fixed else fn.variadic
            assert kind is not None
            values.append(self.eval_arg(dot, kind, arg))
        if final is not _MISSING:
            i = len(given)
            kind = fn.params[i] if i < fixed else fn.variadic
            assert kind is not None
            values.append(self.validate(final, kind))
        self.at(node)
        try:
            return fn.call(self.call, *values) if fn.needs_call else fn.call(*values)
        except (TemplateError, _Break, _Continue):
            raise
        except Exception as e:  # a function's failure, as Go recovers a call's panic
            self.at(node)
            raise self.error(f"error calling {name}: {e}") from None

    # --- arguments -------------------------------------------------------------------------

    def eval_arg(self, dot: Any, kind: str, node: Node) -> Any:
        self.at(node)
        if isinstance(node, DotNode):
            return self.validate(dot, kind)
        if isinstance(node, NilNode):
            if kind in (ANY, STRINGS, LIST, MAP):
                return None
            raise self.error(f"cannot assign nil to {kind}")
        if isinstance(node, FieldNode):
            return self.validate(self.eval_field_chain(dot, dot, node, node.idents, [node], _MISSING), kind)
        if isinstance(node, VariableNode):
            return self.validate(self.eval_variable(dot, node, [], _MISSING), kind)
        if isinstance(node, PipeNode):
            return self.validate(self.eval_pipeline(dot, node), kind)
        if isinstance(node, IdentifierNode):
            return self.validate(self.eval_function(dot, node, node, [node], _MISSING), kind)
        if isinstance(node, ChainNode):
            return self.validate(self.eval_chain(dot, node, [], _MISSING), kind)
        return self.eval_constant(node, kind)

    def eval_constant(self, node: Node, kind: str) -> Any:
        if kind == BOOL:
            if isinstance(node, BoolNode):
                return node.value
            raise self.error(f"expected bool; found {node}")
        if kind == INT:
            if isinstance(node, NumberNode) and node.is_int:
                return node.int_value
            raise self.error(f"expected integer; found {node}")
        if kind == FLOAT:
            if isinstance(node, NumberNode) and node.is_float:
                return node.float_value
            raise self.error(f"expected float; found {node}")
        if kind == STRING:
            if isinstance(node, StringNode):
                return node.text
            raise self.error(f"expected string; found {node}")
        if kind == ANY:
            if isinstance(node, BoolNode):
                return node.value
            if isinstance(node, StringNode):
                return node.text
            if isinstance(node, NumberNode):
                try:
                    return ideal_constant(node)
                except ValueError as e:
                    raise self.error(str(e)) from None
        raise self.error(f"can't handle {node} for arg of type {kind}")

    def validate(self, value: Any, kind: str) -> Any:
        """A value passed to a parameter: Go's assignability, nothing converted."""
        if value is NO_VALUE:
            if kind in (ANY, STRINGS, LIST, MAP):
                return None
            raise self.error(f"invalid value; expected {kind}")
        if not _assignable(value, kind):
            raise self.error(f"wrong type for value; expected {kind}; got {go_type(value)}")
        return value


def _assignable(v: Any, kind: str) -> bool:
    if kind == ANY:
        return True
    if kind == STRING:
        return isinstance(v, str)
    if kind == INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == FLOAT:
        return isinstance(v, float)
    if kind == BOOL:
        return isinstance(v, bool)
    if kind == STRINGS:
        return v is None or (isinstance(v, list | tuple) and all(isinstance(x, str) for x in v))
    if kind == LIST:
        return v is None or isinstance(v, list | tuple)
    return kind == MAP and (v is None or isinstance(v, dict))


def _exported_member(receiver: Any, name: str) -> Any:
    """A Go method or exported field of a struct-like value; a map's keys come after methods."""
    if not name[:1].isupper() or isinstance(receiver, str | int | float | bool | list | tuple):
        return None
    cls = type(receiver)
    if isinstance(receiver, dict):
        return getattr(receiver, name) if name in getattr(cls, "go_methods", ()) else None
    if dataclasses.is_dataclass(receiver) or hasattr(cls, "go_methods"):
        if name in getattr(cls, "go_methods", ()) or name in {f.name for f in dataclasses.fields(receiver)}:
            return getattr(receiver, name)
        return None
    return getattr(receiver, name, None)


def _method_function(method: Callable[..., Any]) -> Function:
    """A Go method's signature, from its ``go_params`` (no parameters unless it says)."""
    params = getattr(method, "go_params", ())
    variadic = getattr(method, "go_variadic", None)
    return Function(method, tuple(params), variadic)
