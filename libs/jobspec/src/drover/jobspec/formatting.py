"""`format`'s verbs, as HCL's format function reads them (Go's fmt verbs)."""

from __future__ import annotations

import json
import re
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.values import format_number, to_number, to_string

_VERB = re.compile(r"%(\[\d+\])?([-+# 0]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])")


def format_verbs(spec: str, args: list[Any]) -> str:
    """`spec` with each verb replaced by the next argument (``%[2]s`` picks one)."""
    out: list[str] = []
    pos, i = 0, 0
    for m in _VERB.finditer(spec):
        out.append(spec[pos : m.start()])
        pos = m.end()
        explicit, flags, width, precision, verb = m.groups()
        if verb == "%":
            out.append("%")
            continue
        if explicit:
            i = int(explicit[1:-1]) - 1
        if i >= len(args):
            raise FunctionError(f"not enough arguments for the format {spec!r}")
        text = _one(verb, args[i], precision)
        i += 1
        if width and int(width) > 1024:
            raise FunctionError(f"width {width} is too large")
        if width:
            text = (
                text.ljust(int(width))
                if "-" in flags
                else text.rjust(int(width), "0" if "0" in flags else " ")
            )
        out.append(text)
    out.append(spec[pos:])
    return "".join(out)


def _one(verb: str, value: Any, precision: str | None) -> str:
    if verb in "sv":
        if isinstance(value, (list, dict)):
            return json.dumps(value, separators=(",", ":"))
        return to_string(value)
    if verb == "q":
        return json.dumps(to_string(value))
    if verb == "t":
        return to_string(value)
    n = to_number(value)
    if verb == "d":
        return str(int(n))
    if verb in "fF":
        return f"{float(n):.{int(precision) if precision else 6}f}"
    if verb in "eEgG":
        return format(float(n), ("." + precision if precision else "") + verb)
    if verb in "xXob":
        return format(int(n), verb)
    return format_number(n)
