"""A policy's text, HCL or JSON, as the blocks and arguments it writes, each with the line it is
on (0 in JSON): what `drover.acl.policy` validates. Nomad reads policies with HCL 1, which
takes JSON as well; its HCL here is HCL's native syntax (read by python-hcl2, through
drover.jobspec.syntax), literal values only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lark import Token, Tree

from drover.jobspec.errors import JobspecError
from drover.jobspec.syntax import Body, parse_body, parts, string_literal


class DocumentError(Exception):
    """The text is neither a policy in HCL nor one in JSON; `problems` say why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Value:
    """An argument's value: a string, a list of strings, or `None` with what it was instead."""

    value: str | list[str] | None
    line: int
    kind: str = ""


@dataclass
class Section:
    """A block: its type, labels and line, its arguments and its blocks in order."""

    type: str
    labels: list[str]
    line: int
    arguments: dict[str, Value] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    # Arguments written twice (HCL refuses them; JSON's decoder would keep the last).
    repeated: list[str] = field(default_factory=list)


def read_document(text: str) -> Section:
    """The whole text as a body (a section with no type); JSON if it starts with `{`."""
    if text.lstrip().startswith("{"):
        return _from_json(text)
    return _from_hcl(text)


# --- HCL ---
def _from_hcl(text: str) -> Section:
    try:
        body = parse_body(text, "policy")
    except JobspecError as e:
        raise DocumentError([_hcl_problem(p) for p in e.problems]) from None
    except RecursionError:
        raise DocumentError(["policy: blocks nested too deep"]) from None
    return _section(body, "", [], 1)


def _hcl_problem(problem: str) -> str:
    """drover.jobspec's `policy:3: syntax: ...` as `line 3: ...`."""
    head, _, rest = problem.partition(": ")
    line = head.rpartition(":")[2]
    return f"line {line}: {rest.removeprefix('syntax: ')}" if line.isdigit() else problem


def _section(body: Body, type_: str, labels: list[str], line: int) -> Section:
    out = Section(type_, labels, line)
    for attr in body.attributes:
        out.arguments[attr.name] = _literal(attr.expr, attr.line)
    for block in body.blocks:
        out.sections.append(_section(block.body, block.type, list(block.labels), block.line))
    return out


def _literal(expr: Any, line: int) -> Value:
    """An expression that is a literal string or a list of them; anything else as what it is."""
    node = _unwrap(expr)
    if isinstance(node, Tree) and node.data == "string":
        text = _string(node)
        return Value(text, line) if text is not None else Value(None, line, "an interpolated string")
    if isinstance(node, Tree) and node.data == "tuple":
        items: list[str] = []
        for item in parts(node)[1:-1]:
            if isinstance(item, Token):  # the commas between the items
                continue
            value = _literal(item, line)
            if not isinstance(value.value, str):
                return Value(None, line, "a list holding something else than strings")
            items.append(value.value)
        return Value(items, line)
    kind = node.data if isinstance(node, Tree) else getattr(node, "type", "")
    return Value(None, line, _KINDS.get(str(kind), "an expression"))


_KINDS = {"int_lit": "a number", "float_lit": "a number", "literal_value": "a literal", "object": "an object",
          "identifier": "a name", "function_call": "a function call"}  # fmt: skip


def _unwrap(node: Any) -> Any:
    """The expression under its `expr_term` wrappings."""
    while isinstance(node, Tree) and node.data == "expr_term" and len(parts(node)) == 1:
        node = parts(node)[0]
    return node


def _string(node: Tree[Any]) -> str | None:
    """A quoted string's text, None if it interpolates anything."""
    for p in node.children:
        if isinstance(p, Tree) and any(isinstance(c, Tree) for c in p.children):
            return None
    return string_literal(node)


# --- JSON ---
def _from_json(text: str) -> Section:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise DocumentError([f"invalid JSON: {e}"]) from None
    if not isinstance(data, dict):
        raise DocumentError(["invalid JSON: a policy is a JSON object"])
    return _json_body(data, "", [])


def _json_body(data: dict[str, Any], type_: str, labels: list[str]) -> Section:
    """A JSON object as a body: a string or a list of strings is an argument, an object or a
    list of objects blocks (one label per level of nesting, as HCL's JSON form has them)."""
    out = Section(type_, labels, 0)
    for key, value in data.items():
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            if key in out.arguments:
                out.repeated.append(key)
            out.arguments[key] = Value(value, 0)
        elif isinstance(value, dict) or (
            isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        ):
            for item in value if isinstance(value, list) else [value]:
                out.sections.extend(_json_blocks(key, item))
        else:
            out.arguments[key] = Value(None, 0, _json_kind(value))
    return out


def _json_blocks(type_: str, item: dict[str, Any]) -> list[Section]:
    """The blocks of one object under `type_`: the labelled form `{"label": {...}}` for the
    blocks Nomad labels, the body itself otherwise."""
    if type_ in LABELLED:
        out = []
        for label, body in item.items():
            for one in body if isinstance(body, list) else [body]:
                if isinstance(one, dict):
                    out.append(_json_body(one, type_, [label]))
                else:
                    out.append(Section(type_, [label], 0, {"": Value(None, 0, _json_kind(one))}))
        return out
    return [_json_body(item, type_, [])]


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list holding something else than strings" if value else "an empty list"
    return "an object"


# The blocks that take a label (a name, or a variables path).
LABELLED = frozenset({"namespace", "node_pool", "host_volume", "path"})
