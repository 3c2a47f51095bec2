"""`dynamic` blocks: one block of the labelled type for each element of `for_each`, its
`content` evaluated with the iterator (the type's name, or `iterator`) bound to
``{key, value}``, as HCL's dynblock extension generates them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lark import Tree

from drover.jobspec.errors import EvalError
from drover.jobspec.evaluate import evaluate
from drover.jobspec.interpolation import known
from drover.jobspec.reader import Reader
from drover.jobspec.syntax import Block, name_of, parts
from drover.jobspec.values import type_name


def generate(
    reader: Reader, block: Block, scope: Mapping[str, Any], where: str
) -> list[tuple[Block, Mapping[str, Any]]]:
    here = f"{where}.dynamic[{block.labels[0] if block.labels else ''}]"
    if len(block.labels) != 1:
        reader.problem(block.line, here, "a dynamic block takes one label, the type of the blocks it makes")
        return []
    attrs = {a.name: a for a in block.body.attributes}
    contents = [b for b in block.body.blocks if b.type == "content"]
    for a in attrs:
        if a not in ("for_each", "iterator", "labels"):
            reader.problem(
                attrs[a].line, f"{here}.{a}", "unsupported argument (use for_each, iterator, labels)"
            )
    if "for_each" not in attrs or len(contents) != 1:
        reader.problem(block.line, here, "a dynamic block needs for_each and one content block")
        return []
    iterator = block.labels[0]
    if "iterator" in attrs:
        term = [c for c in parts(attrs["iterator"].expr) if isinstance(c, Tree)]
        if len(term) != 1 or term[0].data != "identifier":
            reader.problem(attrs["iterator"].line, f"{here}.iterator", "iterator must be a name")
            return []
        iterator = name_of(term[0])
    try:
        collection = known(evaluate(attrs["for_each"].expr, reader.ctx, scope))
    except EvalError as e:
        reader.problem(e.line or attrs["for_each"].line, f"{here}.for_each", e.message)
        return []
    if isinstance(collection, dict):
        pairs: list[tuple[Any, Any]] = sorted(collection.items())
    elif isinstance(collection, list):
        pairs = list(enumerate(collection))
    else:
        reader.problem(
            attrs["for_each"].line,
            f"{here}.for_each",
            f"a list or map is required, not a {type_name(collection)}",
        )
        return []
    out: list[tuple[Block, Mapping[str, Any]]] = []
    for key, value in pairs:
        inner = {**scope, iterator: {"key": key, "value": value}}
        labels: list[str] = []
        if "labels" in attrs:
            try:
                labels = [str(v) for v in known(evaluate(attrs["labels"].expr, reader.ctx, inner))]
            except EvalError as e:
                reader.problem(e.line or attrs["labels"].line, f"{here}.labels", e.message)
                continue
        out.append((Block(block.labels[0], labels, contents[0].body, contents[0].line), inner))
    return out
