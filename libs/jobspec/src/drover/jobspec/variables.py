"""Input variables and locals, as Nomad reads them.

A variable's value is, from lowest to highest precedence: its default, a ``NOMAD_VAR_<name>``
environment variable, the var files in order, then ``-var name=value``. A value given as text
(the environment, -var) is taken as a string for a string, number or untyped variable and as
an HCL expression otherwise, then converted to the variable's type. Every declared variable
must end with a value, and every validation must hold. Locals may use each other in any order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drover.jobspec.context import Context
from drover.jobspec.errors import EvalError, JobspecError, Problems
from drover.jobspec.evaluate import evaluate
from drover.jobspec.interpolation import known
from drover.jobspec.syntax import Attribute, Block, Body, parse_body, parse_tree, parts
from drover.jobspec.typeexpr import type_of
from drover.jobspec.values import ANY, ConversionError, Type, convert, describe, infer

ENV_PREFIX = "NOMAD_VAR_"


@dataclass
class Variable:
    name: str
    line: int
    type: Type | None = None
    value: Any = None
    source: str = ""  # where the value came from; "" while there is none
    validations: list[Block] = field(default_factory=list)


def declare(blocks: list[Block], ctx: Context, problems: Problems) -> dict[str, Variable]:
    """The variables declared by `variable` blocks, each with its default."""
    out: dict[str, Variable] = {}
    for block in blocks:
        if block.type == "variables":
            _declare_many(block, ctx, problems, out)
            continue
        if len(block.labels) != 1:
            problems.add(ctx.filename, block.line, "variable", "a variable block takes one label, its name")
            continue
        name = block.labels[0]
        where = f"variable[{name}]"
        if name in out:
            problems.add(ctx.filename, block.line, where, f"declared again (first at line {out[name].line})")
            continue
        var = out[name] = Variable(name, block.line)
        attrs = {a.name: a for a in block.body.attributes}
        for a in attrs.values():
            if a.name not in ("type", "default", "description", "sensitive", "nullable"):
                problems.add(ctx.filename, a.line, f"{where}.{a.name}", "unsupported argument")
        try:
            if "type" in attrs:
                var.type = type_of(attrs["type"].expr, lambda n: evaluate(n, Context(ctx.filename)))
            if "default" in attrs:
                default = known(
                    evaluate(attrs["default"].expr, Context(ctx.filename, functions=ctx.functions))
                )
                var.value = convert(default, var.type) if var.type else default
                var.type = var.type or infer(default)
                var.source = "default"
        except (EvalError, ConversionError) as e:
            what = "default" if var.type else "type"
            line = getattr(e, "line", 0) or attrs[what].line
            problems.add(ctx.filename, line, where, f"invalid {what}: {e}")
            var.source = "invalid"  # reported once, not again as unset
        var.validations = [b for b in block.body.blocks if b.type == "validation"]
    return out


def _declare_many(block: Block, ctx: Context, problems: Problems, out: dict[str, Variable]) -> None:
    """The older `variables { name = default ... }` block: each argument a variable with its
    default, its type taken from it."""
    for attr in block.body.attributes:
        if attr.name in out:
            problems.add(
                ctx.filename,
                attr.line,
                f"variables.{attr.name}",
                f"declared again (first at line {out[attr.name].line})",
            )
            continue
        try:
            default = known(evaluate(attr.expr, Context(ctx.filename, functions=ctx.functions)))
        except EvalError as e:
            problems.add(ctx.filename, e.line or attr.line, f"variables.{attr.name}", e.message)
            default = None
        out[attr.name] = Variable(attr.name, attr.line, infer(default), default, "default")


def assign(
    variables: dict[str, Variable],
    filename: str,
    values: Mapping[str, str],
    var_files: Sequence[tuple[str, str]],
    env: Mapping[str, str],
    problems: Problems,
) -> None:
    """Set the values given, lowest precedence first."""
    for key, text in env.items():
        name = key.removeprefix(ENV_PREFIX)
        if key.startswith(ENV_PREFIX) and name in variables:
            _set_text(variables[name], text, f"environment variable {key}", problems)
    for var_filename, content in var_files:
        _from_file(variables, var_filename, content, problems)
    for name, text in values.items():
        if name not in variables:
            problems.add("-var", 1, name, f'there is no variable named "{name}" declared in {filename}')
            continue
        _set_text(variables[name], text, "-var", problems)


def _set_text(var: Variable, text: str, source: str, problems: Problems) -> None:
    try:
        if var.type is None or var.type[0] in ("string", "number"):
            value: Any = text
        else:
            tree = parse_tree(f"x = {text}\n", source)
            value = evaluate(parts(parts(tree.children[0])[0])[2], Context(source))
        var.value, var.source = convert(value, var.type or ANY), source
    except (JobspecError, EvalError, ConversionError) as e:
        problems.add(source, 1, var.name, f"invalid value for variable {var.name!r}: {e}")


def _from_file(variables: dict[str, Variable], filename: str, content: str, problems: Problems) -> None:
    try:
        body = parse_body(content, filename)
    except JobspecError as e:
        problems.extend(e.problems)
        return
    for block in body.blocks:
        problems.add(filename, block.line, block.type, "a var file only assigns values (name = value)")
    for attr in body.attributes:
        var = variables.get(attr.name)
        if var is None:
            problems.add(filename, attr.line, attr.name, f'there is no variable named "{attr.name}" declared')
            continue
        try:
            value = evaluate(attr.expr, Context(filename))
            var.value, var.source = convert(value, var.type or ANY), filename
        except (EvalError, ConversionError) as e:
            type_text = f" (a {describe(var.type)} is required)" if var.type else ""
            problems.add(filename, getattr(e, "line", 0) or attr.line, attr.name, f"{e}{type_text}")


def check(variables: dict[str, Variable], ctx: Context, problems: Problems) -> dict[str, Any]:
    """Every variable's value, after its validations; unset ones are problems."""
    for var in variables.values():
        where = f"variable[{var.name}]"
        if var.source == "invalid":
            continue
        if not var.source:
            problems.add(ctx.filename, var.line, where, "no value given and no default "
                         f"(set it with -var {var.name}=..., a var file or {ENV_PREFIX}{var.name})")  # fmt: skip
            continue
        for rule in var.validations:
            _validate(var, rule, ctx, problems)
    return {v.name: v.value for v in variables.values()}


def _validate(var: Variable, rule: Block, ctx: Context, problems: Problems) -> None:
    attrs = {a.name: a for a in rule.body.attributes}
    where = f"variable[{var.name}].validation"
    if "condition" not in attrs or "error_message" not in attrs:
        problems.add(ctx.filename, rule.line, where, "a validation needs a condition and an error_message")
        return
    only = Context(ctx.filename, variables={var.name: var.value}, functions=ctx.functions)
    try:
        ok = evaluate(attrs["condition"].expr, only)
        message = evaluate(attrs["error_message"].expr, only)
    except EvalError as e:
        problems.add(ctx.filename, e.line or rule.line, where, e.message)
        return
    if ok is not True and ok is not False:
        problems.add(ctx.filename, attrs["condition"].line, where, "the condition must be true or false")
    elif not ok:
        problems.add(ctx.filename, attrs["condition"].line, where,
                     f"invalid value for variable {var.name!r} (from {var.source}): {message}")  # fmt: skip


class Locals:
    """`locals` values, each evaluated once on first use; a cycle is a problem."""

    def __init__(self, body_attrs: list[Attribute], ctx: Context, problems: Problems) -> None:
        self.attrs: dict[str, Attribute] = {}
        for a in body_attrs:
            if a.name in self.attrs:
                problems.add(ctx.filename, a.line, f"locals.{a.name}", "set again (a local is set once)")
            self.attrs.setdefault(a.name, a)
        self.ctx = ctx
        self.values: dict[str, Any] = {}
        self.busy: set[str] = set()

    def get(self, name: str, line: int) -> Any:
        if name in self.values:
            return self.values[name]
        attr = self.attrs.get(name)
        if attr is None:
            raise EvalError(f'there is no local value named "{name}"', line)
        if name in self.busy:
            raise EvalError(f'local "{name}" refers to itself', line)
        self.busy.add(name)
        try:
            self.values[name] = evaluate(attr.expr, self.ctx)
        finally:
            self.busy.discard(name)
        return self.values[name]

    def check_all(self, problems: Problems) -> None:
        """Evaluate every local, so a broken one is reported even when unused."""
        for name, attr in self.attrs.items():
            try:
                self.get(name, attr.line)
            except EvalError as e:
                problems.add(self.ctx.filename, e.line or attr.line, f"locals.{name}", e.message)


def local_attributes(body: Body) -> list[Attribute]:
    return [a for b in body.blocks if b.type == "locals" for a in b.body.attributes]
