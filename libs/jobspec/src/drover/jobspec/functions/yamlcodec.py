"""yamldecode and yamlencode, as cty's YAML codec reads and writes YAML.

Reading follows YAML 1.1's plain scalars as cty resolves them: y/yes/on and n/no/off are bools,
~ and null are null, 0x and 0o prefixes are integers, a date or timestamp becomes an RFC 3339
string; quoted scalars are always strings; one document only; anchors, aliases and << merges
are followed. PyYAML parses; the resolution is cty's, done here. Writing emits the events cty
emits (strings double-quoted, or as literal blocks when they span lines; keys sorted) through
PyYAML's emitter, a port of the same libyaml emitter cty's is."""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml import events

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, takes
from drover.jobspec.values import format_number, to_string
from drover.jobspec.values import number as hcl_number

_TAG = "tag:yaml.org,2002:"
_BOOLS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULLS = ("", "~", "null", "Null", "NULL")
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_TIMESTAMP = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?:[Tt](?P<tz_h>[0-9]{1,2}):(?P<tz_mi>[0-9]{1,2}):(?P<tz_s>[0-9]{1,2})(?:\.(?P<tz_f>[0-9]+))?"
    r"(?P<zone>Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: (?P<h>[0-9]{1,2}):(?P<mi>[0-9]{1,2}):(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]+))?))?"
)
_RESOLVABLE = {"", "str", "bool", "int", "float", "null", "timestamp", "binary"}
# Drover's bound on the values a document stands for, aliases expanded: a few lines of nested
# aliases can stand for billions, which walking would only exhaust the parser on.
_MAX_VALUES = 100_000


def _yamldecode(src: Any) -> Any:
    text = string(src, "src") or "\n"
    try:
        stream = yaml.parse(text, Loader=yaml.SafeLoader)
        return _Decoder(stream).document()
    except yaml.YAMLError as e:
        raise FunctionError(f"not valid YAML: {e}") from None


class _Decoder:
    """A YAML event stream made into values as cty's converter makes them."""

    def __init__(self, stream: Iterator[events.Event]) -> None:
        self.stream = stream
        self.anchors: dict[str, Any] = {}
        self.pending: set[str] = set()
        self.count = 0  # values made so far, an alias counting all it stands for
        self.sizes: dict[str, int] = {}

    def next(self) -> events.Event:
        return next(self.stream)

    def document(self) -> Any:
        self.next()  # the stream's start
        if not isinstance(self.next(), events.DocumentStartEvent):
            raise FunctionError("missing start of document")
        value = self.value(self.next())
        end = self.next()
        if isinstance(end, events.DocumentStartEvent):
            raise FunctionError("only a single document is allowed")
        if not isinstance(end, events.DocumentEndEvent) or not isinstance(self.next(), events.StreamEndEvent):
            raise FunctionError("unexpected extra content after value")
        return value

    def value(self, event: events.Event) -> Any:
        if isinstance(event, events.AliasEvent):
            return self.alias(event.anchor or "")
        if not isinstance(event, (events.ScalarEvent, events.MappingStartEvent, events.SequenceStartEvent)):
            raise FunctionError(f"expecting a value but found {type(event).__name__}")
        anchor, before = event.anchor, self.count
        self.grow(1)
        if anchor:
            self.pending.add(anchor)
        if isinstance(event, events.ScalarEvent):
            value = resolve(event.tag or "", event.value, event.style)
        elif isinstance(event, events.MappingStartEvent):
            value = self.mapping(event)
        else:
            value = self.sequence(event)
        if anchor:
            self.pending.discard(anchor)
            self.anchors[anchor] = value
            self.sizes[anchor] = self.count - before
        return value

    def grow(self, n: int) -> None:
        self.count += n
        if self.count > _MAX_VALUES:
            raise FunctionError(f"the document stands for more than {_MAX_VALUES} values")

    def alias(self, name: str) -> Any:
        if name in self.pending:
            raise FunctionError(f'cannot refer to anchor "{name}" from inside its own definition')
        if name not in self.anchors:
            raise FunctionError(f'reference to undefined anchor "{name}"')
        self.grow(self.sizes[name])
        return self.anchors[name]

    def mapping(self, start: events.MappingStartEvent) -> dict[str, Any]:
        if start.tag not in (None, _TAG + "map"):
            raise FunctionError(f"can't interpret mapping as {start.tag}")
        out: dict[str, Any] = {}
        while not isinstance(key := self.next(), events.MappingEndEvent):
            if isinstance(key, events.ScalarEvent) and (
                key.tag == _TAG + "merge" or (key.tag is None and key.value == "<<")
            ):
                self.merge(out, self.value(self.next()))
                continue
            if not isinstance(key, events.ScalarEvent):
                raise FunctionError("only strings are allowed as mapping keys")
            name = resolve(key.tag or "", key.value, key.style)
            if name is None:
                raise FunctionError("mapping key cannot be null")
            if isinstance(name, (list, dict)):
                raise FunctionError("only strings are allowed as mapping keys")
            out[to_string(name)] = self.value(self.next())
        return out

    def merge(self, into: dict[str, Any], value: Any) -> None:
        if isinstance(value, dict):
            into.update(value)
        elif isinstance(value, list):
            for item in value:
                if not isinstance(item, dict):
                    raise FunctionError("cannot merge a non-mapping (from sequence) into mapping")
                into.update(item)
        else:
            raise FunctionError("cannot merge a non-mapping into mapping")

    def sequence(self, start: events.SequenceStartEvent) -> list[Any]:
        if start.tag not in (None, _TAG + "seq"):
            raise FunctionError(f"can't interpret sequence as {start.tag}")
        out = []
        while not isinstance(item := self.next(), events.SequenceEndEvent):
            out.append(self.value(item))
        return out


def resolve(tag: str, src: str, style: str | None) -> Any:
    """A scalar's value as cty resolves it: by its tag, or by its text when it has none."""
    kind = tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
    if tag and kind not in _RESOLVABLE:
        raise FunctionError(f'unsupported tag "{tag}"')
    if kind not in ("str", "binary") and (not src or src[0] in "+-0123456789yYnNtTfFoO~."):
        if style in ("'", '"'):
            return src
        if src in _BOOLS:
            return _BOOLS[src]
        if src in _NULLS:
            return None
        if src in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"):
            raise FunctionError("infinity is not supported")
        if not kind and src in (".nan", ".NaN", ".NAN"):
            raise FunctionError("floating point NaN is not supported")
        if src[:1] == ".":
            parsed = _number(src)
            if parsed is not None:
                return parsed
        elif src[:1] not in "yYnNtTfFoO~":
            if kind in ("", "timestamp") and (stamp := _timestamp(src)) is not None:
                return stamp
            if _INT.fullmatch(src):
                kind = "int"
            elif _FLOAT.fullmatch(src):
                kind = "float"
    if kind == "binary":
        try:
            base64.b64decode(src, validate=True)
        except (binascii.Error, ValueError):
            raise FunctionError(f'cannot parse "{src}" as {tag}: not valid base64') from None
    if kind in ("", "str", "binary"):
        return src
    if kind == "bool":
        if src not in _BOOLS:
            raise FunctionError(f'cannot parse "{src}" as {tag}')
        return _BOOLS[src]
    if kind in ("int", "float"):
        parsed = _number(src.replace("_", ""))
        if parsed is None:
            raise FunctionError(f'cannot parse "{src}" as {tag}')
        return parsed
    if kind == "timestamp":
        stamp = _timestamp(src)
        if stamp is None:
            raise FunctionError(f'cannot parse "{src}" as {tag}')
        return stamp
    return None  # null


def _number(text: str) -> int | float | None:
    if _FLOAT.fullmatch(text):
        return int(text) if re.fullmatch(r"[-+]?[0-9]+", text) else hcl_number(float(text))
    try:
        return int(text, 0)  # 0x, 0o and 0b, as Go's ParseInt with base 0
    except ValueError:
        return None


def _timestamp(text: str) -> str | None:
    """A YAML date or timestamp as the RFC 3339 text cty makes of it (seconds, no fraction)."""
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        return None
    try:
        day = datetime.date(int(m["y"]), int(m["m"]), int(m["d"]))
        h, mi, s = (
            (m["tz_h"], m["tz_mi"], m["tz_s"]) if m["tz_h"] else (m["h"] or 0, m["mi"] or 0, m["s"] or 0)
        )
        at = datetime.datetime.combine(day, datetime.time(int(h), int(mi), int(s)))
    except ValueError:
        return None
    zone = m["zone"]
    if zone in (None, "Z"):
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if int(zone[1:3]) > 23 or int(zone[4:6]) > 59:
        return None
    return at.strftime("%Y-%m-%dT%H:%M:%S") + zone


def _yamlencode(value: Any) -> str:
    if value == "":
        # libyaml writes an empty string at the top as "" alone; PyYAML's port adds "---".
        return '""\n'
    body = list(_events(value))
    stream = [
        events.StreamStartEvent(encoding="utf-8"),
        events.DocumentStartEvent(explicit=False),
        *body,
        events.DocumentEndEvent(explicit=False),
        events.StreamEndEvent(),
    ]
    text: str = yaml.emit(stream, allow_unicode=True)
    return text


def _events(value: Any) -> Iterator[events.Event]:
    if value is None or isinstance(value, bool):
        yield _plain("null" if value is None else "true" if value else "false")
    elif isinstance(value, (int, float)):
        yield _plain(format_number(value))
    elif isinstance(value, str):
        yield events.ScalarEvent(None, None, (True, True), value, style="|" if "\n" in value else '"')
    elif isinstance(value, list):
        yield events.SequenceStartEvent(None, None, True, flow_style=False)
        for item in value:
            yield from _events(item)
        yield events.SequenceEndEvent()
    else:
        yield events.MappingStartEvent(None, None, True, flow_style=False)
        for key in sorted(value):
            yield from _events(key)
            yield from _events(value[key])
        yield events.MappingEndEvent()


def _plain(text: str) -> events.ScalarEvent:
    return events.ScalarEvent(None, None, (True, True), text, style=None)


def table() -> dict[str, Fn]:
    return {
        "yamldecode": takes(_yamldecode, "src"),
        "yamlencode": takes(_yamlencode, "value"),
    }
