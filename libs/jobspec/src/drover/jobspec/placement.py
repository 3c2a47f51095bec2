"""`constraint` and `affinity` blocks, read as Nomad's jobspec reads them: `attribute`,
`operator` and `value`, or a shortcut argument naming the operator (``distinct_hosts = true``,
``regexp = "..."``, ``version = ">= 1.2"``, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drover.jobspec.kinds import convert_kind
from drover.jobspec.reader import Reader
from drover.jobspec.syntax import Block

# Shortcuts that set the operator and take the value as RTarget, in the order Nomad applies them.
_SHORTCUTS = {
    "constraint": ("version", "semver", "regexp", "set_contains", "set_contains_any", "set_contains_all"),
    "affinity": ("version", "semver", "regexp", "set_contains_any", "set_contains_all", "set_contains"),
}
_PLAIN = {
    "constraint": ("attribute", "value", "operator", "distinct_property", "distinct_hosts"),
    "affinity": ("attribute", "value", "operator", "weight"),
}  # fmt: skip


def decode(reader: Reader, block: Block, kind: str, where: str, scope: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    allowed = _PLAIN[kind] + _SHORTCUTS[kind]
    for attr in block.body.attributes:
        here = f"{where}.{attr.name}"
        if attr.name not in allowed:
            reader.problem(attr.line, here, "unsupported argument")
            continue
        ok, value = reader.value(attr, scope, here)
        want = "bool" if attr.name == "distinct_hosts" else "int" if attr.name == "weight" else "string"
        if ok:
            try:
                values[attr.name] = convert_kind(want, value)
            except ValueError as e:
                reader.problem(attr.line, here, str(e))
    for inner in block.body.blocks:
        reader.problem(inner.line, f"{where}.{inner.type}", f"a {kind} block holds only arguments")
    out: dict[str, Any] = {
        "LTarget": values.get("attribute", ""),
        "RTarget": values.get("value", ""),
        "Operand": values.get("operator", ""),
    }
    for name in _SHORTCUTS[kind]:
        if values.get(name):
            out["Operand"], out["RTarget"] = name, values[name]
    if kind == "constraint":
        if "distinct_hosts" in values:
            out["Operand"], out["RTarget"] = "distinct_hosts", "true" if values["distinct_hosts"] else "false"
        if values.get("distinct_property"):
            out["Operand"], out["LTarget"] = "distinct_property", values["distinct_property"]
    elif "weight" in values:
        out["Weight"] = values["weight"]
    out["Operand"] = out["Operand"] or "="
    return out
