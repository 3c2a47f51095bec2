"""Encodings: base64, URL query escaping, JSON and CSV, as cty and Go's libraries write and read
them (JSON with keys sorted and <, > and & escaped, as Go's encoder does; CSV by Go's rules)."""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, takes
from drover.jobspec.values import format_number
from drover.jobspec.values import number as hcl_number

# What Go's encoding/json escapes beyond what Python's does, so HTML cannot be smuggled in.
_GO_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_text(value: Any) -> str:
    """`value` as cty writes JSON: compact, object keys sorted, numbers never in exponent form."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return format_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).translate(_GO_ESCAPES)
    if isinstance(value, list):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    return "{" + ",".join(f"{json_text(k)}:{json_text(value[k])}" for k in sorted(value)) + "}"


def _jsondecode(s: Any) -> Any:
    try:
        return json.loads(
            string(s, "str"),
            parse_float=lambda t: hcl_number(float(t)),
            parse_constant=_not_json,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as e:
        raise FunctionError(f"not valid JSON: {e}") from None


def _not_json(name: str) -> Any:
    raise FunctionError(f"not valid JSON: {name} is not a JSON value")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise FunctionError(f'not valid JSON: duplicate "{k}" property in JSON object')
        out[k] = v
    return out


def _base64decode(s: Any) -> str:
    text = string(s, "str")
    try:
        # Go's decoder skips line breaks, and wants the padding.
        raw = base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        raise FunctionError(f"failed to decode base64 data '{text}'") from None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise FunctionError("the result of decoding the provided string is not valid UTF-8") from None


def _csvdecode(s: Any) -> list[dict[str, str]]:
    rows = _csv_records(string(s, "str"))
    if not rows:
        raise FunctionError("missing header line")
    (_, header), body = rows[0], rows[1:]
    if len(set(header)) != len(header):
        name = next(h for h in header if header.count(h) > 1)
        raise FunctionError(f'duplicate column name "{name}"')
    out = []
    for line, fields in body:
        if len(fields) != len(header):
            raise FunctionError(f"CSV parse error on line {line}: wrong number of fields")
        out.append(dict(zip(header, fields, strict=True)))
    return out


def _csv_records(text: str) -> list[tuple[int, list[str]]]:
    """The records of `text` by Go's encoding/csv rules, each with the line it starts on:
    fields split at commas, a quoted field may hold commas, newlines and doubled quotes, a
    quote elsewhere is an error, \\r\\n ends a line as \\n does, empty lines are skipped."""
    text = text.replace("\r\n", "\n")
    records: list[tuple[int, list[str]]] = []
    i, line = 0, 1
    while i < len(text):
        if text[i] == "\n":
            i, line = i + 1, line + 1
            continue
        start_line, fields = line, []
        while True:
            if text.startswith('"', i):
                value, i, line = _quoted(text, i + 1, line)
                if i < len(text) and text[i] not in ",\n":
                    raise FunctionError(
                        f'CSV parse error on line {line}: extraneous or missing " in quoted-field'
                    )
            else:
                end = min(j for j in (text.find(",", i), text.find("\n", i), len(text)) if j >= 0)
                value = text[i:end]
                if '"' in value:
                    raise FunctionError(f'CSV parse error on line {line}: bare " in non-quoted-field')
                i = end
            fields.append(value)
            if i < len(text) and text[i] == ",":
                i += 1
                continue
            break
        records.append((start_line, fields))
        if i < len(text):
            i, line = i + 1, line + 1
    return records


def _quoted(text: str, i: int, line: int) -> tuple[str, int, int]:
    out = []
    while True:
        close = text.find('"', i)
        if close < 0:
            raise FunctionError(f'CSV parse error on line {line}: extraneous or missing " in quoted-field')
        out.append(text[i:close])
        line += text.count("\n", i, close)
        if text.startswith('"', close + 1):
            out.append('"')
            i = close + 2
            continue
        return "".join(out), close + 1, line


def table() -> dict[str, Fn]:
    return {
        "base64encode": takes(lambda s: base64.b64encode(string(s, "str").encode()).decode(), "str"),
        "base64decode": takes(_base64decode, "str"),
        # Go's url.QueryEscape: a space is "+", all but letters, digits and -_.~ escaped.
        "urlencode": takes(lambda s: urllib.parse.quote_plus(string(s, "str"), safe=""), "str"),
        "jsonencode": takes(json_text, "val"),
        "jsondecode": takes(_jsondecode, "str"),
        "csvdecode": takes(_csvdecode, "str"),
    }
