"""A body decoded by its spec (drover.jobspec.schema) into Nomad's API JSON: every argument
evaluated and converted to its kind, `dynamic` blocks expanded, and every problem recorded with
its file, line and field rather than stopping at the first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lark import Tree

from drover.jobspec import placement
from drover.jobspec.dynamic import generate
from drover.jobspec.kinds import convert_kind
from drover.jobspec.reader import Reader
from drover.jobspec.schema import Arg, Nested, Spec, json_name
from drover.jobspec.syntax import Attribute, Block, Body, parts
from drover.jobspec.values import ConversionError, type_name

Scope = Mapping[str, Any]


class Decoder(Reader):
    """Bodies decoded by their spec, every argument read as drover.jobspec.reader reads it."""

    def block(self, block: Block, spec: Spec, where: str, scope: Scope) -> dict[str, Any] | None:
        """A block's JSON object, or None when its header is wrong."""
        if len(block.labels) != (1 if spec.label else 0):
            want = "one label" if spec.label else "no labels"
            self.problem(block.line, where, f"a {block.type} block takes {want}, not {len(block.labels)}")
            return None
        if spec.special:
            return placement.decode(self, block, spec.special, where, scope)
        out = self.body(block.body, spec, where, scope)
        if spec.label:
            out = {spec.label: block.labels[0], **out}
        if spec.post is not None:
            spec.post(out)
        return out

    def body(self, body: Body, spec: Spec, where: str, scope: Scope) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr in body.attributes:
            f = spec.fields.get(attr.name)
            if isinstance(f, Nested):
                self.problem(
                    attr.line, f"{where}.{attr.name}", f"{attr.name} is a block: write {attr.name} {{ ... }}"
                )
            elif f is None:
                self.problem(attr.line, f"{where}.{attr.name}", "unsupported argument")
            else:
                ok, value = self.value(attr, scope, f"{where}.{attr.name}")
                if (
                    ok
                    and (converted := self.convert(attr, f.kind, value, scope, f"{where}.{attr.name}"))
                    is not None
                ):
                    out[json_name(attr.name, f)] = converted
        for block, inner in self.expand(body.blocks, scope, where):
            self.nested(out, block, spec, where, inner)
        return out

    def nested(self, out: dict[str, Any], block: Block, spec: Spec, where: str, scope: Scope) -> None:
        f = spec.fields.get(block.type)
        label = f"[{block.labels[0]}]" if block.labels else ""
        here = f"{where}.{block.type}{label}"
        if f is None:
            self.problem(block.line, here, f"unsupported block type {block.type!r}")
            return
        key = json_name(block.type, f)
        if isinstance(f, Arg):
            if key in out:
                self.problem(block.line, here, f"{block.type} is set more than once")
            elif f.kind == "any":
                out[key] = self.any_body(block.body, scope, here)
            elif not block.labels:
                out[key] = self.convert_block(block, f.kind, scope, here)
            else:
                self.problem(block.line, here, f"a {block.type} block takes no labels")
            return
        value = self.block(block, f.spec, here, scope)
        if value is None:
            return
        if f.mode == "list":
            out.setdefault(key, []).append(value)
        elif f.mode == "map":
            out.setdefault(key, {})[block.labels[0]] = value
        elif key in out:
            self.problem(block.line, here, f"only one {block.type} block is allowed here")
        else:
            out[key] = value

    def convert(self, attr: Attribute, kind: str, value: Any, scope: Scope, where: str) -> Any:
        """`value` as `kind`; None (and a problem) when it is not one."""
        try:
            if kind == "any" and not isinstance(value, dict):
                raise ConversionError(f"a map or a block is required, not a {type_name(value)}")
            return convert_kind(kind, value)
        except (ConversionError, ValueError) as e:
            self.problem(attr.line, where, str(e))
            return None

    def convert_block(self, block: Block, kind: str, scope: Scope, where: str) -> Any:
        """A map written as a block (``meta { key = "value" }``)."""
        values: dict[str, Any] = {}
        for attr in block.body.attributes:
            ok, value = self.value(attr, scope, f"{where}.{attr.name}")
            if ok:
                values[attr.name] = value
        for inner in block.body.blocks:
            self.problem(inner.line, f"{where}.{inner.type}", f"a {block.type} block holds only arguments")
        try:
            return convert_kind(kind, values)
        except ConversionError as e:
            self.problem(block.line, where, str(e))
            return None

    def any_body(self, body: Body, scope: Scope, where: str) -> dict[str, Any]:
        """A driver's config: arguments as they are (an object written in place wrapped in a
        list), nested blocks as lists of objects under their type, labels as nested keys."""
        out: dict[str, Any] = {}
        for attr in body.attributes:
            ok, value = self.value(attr, scope, f"{where}.{attr.name}")
            if ok:
                out[attr.name] = [value] if _is_object_constructor(attr.expr) else value
        for block, inner in self.expand(body.blocks, scope, where):
            obj: dict[str, Any] = self.any_body(block.body, inner, f"{where}.{block.type}")
            for label in reversed(block.labels):
                obj = {label: [obj]}
            out.setdefault(block.type, []).append(obj)
        return out

    def expand(self, blocks: list[Block], scope: Scope, where: str) -> list[tuple[Block, Scope]]:
        """The blocks with each `dynamic` block replaced by the blocks it generates."""
        out: list[tuple[Block, Scope]] = []
        for block in blocks:
            if block.type != "dynamic":
                out.append((block, scope))
                continue
            out.extend(generate(self, block, scope, where))
        return out


def _is_object_constructor(expr: Any) -> bool:
    inner = [c for c in parts(expr) if isinstance(c, Tree)] if expr.data == "expr_term" else []
    return len(inner) == 1 and inner[0].data == "object" and len(parts(expr)) == 1


__all__ = ["Decoder"]
