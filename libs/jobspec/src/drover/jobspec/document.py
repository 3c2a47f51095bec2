"""Plain HCL documents, such as an agent's configuration file, read as plain data: each argument
evaluated (no variables, locals or functions; runtime interpolations as their text), each
block a list under its type in the order written, a labelled block's body under its labels."""

from __future__ import annotations

from typing import Any

from drover.jobspec.context import Context
from drover.jobspec.errors import JobspecError, Problems
from drover.jobspec.reader import Reader
from drover.jobspec.syntax import Body, parse_body


def parse_document(src: str, *, filename: str) -> dict[str, Any]:
    """The document `src` as plain data: ``a = 1`` is {"a": 1}, ``client { a = 1 }`` is
    {"client": [{"a": 1}]}, ``plugin "x" { a = 1 }`` is {"plugin": [{"x": {"a": 1}}]}.
    Raises JobspecError listing every problem found, each ``file:line: field: message``."""
    problems = Problems()
    try:
        out = _body(parse_body(src, filename), Reader(Context(filename), problems), "")
    except RecursionError:
        raise JobspecError([f"{filename}:1: document: expressions or blocks nested too deep"]) from None
    problems.raise_if_any()
    return out


def _body(body: Body, reader: Reader, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in body.attributes:
        ok, value = reader.value(attr, {}, where + attr.name)
        if ok:
            out[attr.name] = value
    arguments = {attr.name for attr in body.attributes}
    for block in body.blocks:
        here = where + block.type + "".join(f"[{label}]" for label in block.labels)
        if block.type in arguments:
            reader.problem(block.line, here, f"{block.type} is set as an argument as well")
            continue
        value = _body(block.body, reader, here + ".")
        for label in reversed(block.labels):
            value = {label: value}
        out.setdefault(block.type, []).append(value)
    return out
