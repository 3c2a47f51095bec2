"""Constraint and affinity matching against one node, with Nomad's operands and interpolation.

Everything here is a pure function of (constraint, node). ``distinct_hosts`` and
``distinct_property`` are not: they depend on where other allocations are placed, so the
placement code handles them and :func:`matches` refuses them.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from drover.model.job import CONSTRAINT_DISTINCT_HOSTS, CONSTRAINT_DISTINCT_PROPERTY, Affinity, Constraint
from drover.model.node import Node

__all__ = [
    "check_operand",
    "is_escaped",
    "match_calls",
    "matches",
    "resolve_target",
]

DISTINCT_OPERANDS = frozenset({CONSTRAINT_DISTINCT_HOSTS, CONSTRAINT_DISTINCT_PROPERTY})

# Targets naming per-node values: a computed node class does not cover them (Nomad's
# constraintTargetEscapes; "${unique." is its legacy spelling).
_ESCAPING_PREFIXES = ("${node.unique.", "${attr.unique.", "${meta.unique.", "${unique.")

# Cache sizes for parsed regexps / versions / version constraints. Bounded so a stream of
# distinct node attribute values cannot grow memory without limit.
_CACHE_SIZE = 4096

# --------------------------------------------------------------------------------------------
# Interpolation
# --------------------------------------------------------------------------------------------


def resolve_target(target: str, node: Node) -> tuple[str, bool]:
    """Resolve an LTarget/RTarget against ``node``: ``(value, found)``.

    A target not starting with ``${`` is a literal. Unknown interpolations and missing
    attribute/meta keys resolve to ``("", False)``.
    """
    if not target.startswith("${"):
        return target, True
    if target.startswith("${attr."):
        # Nomad strips the prefix and one trailing brace, nothing more.
        key = target[7:-1] if target.endswith("}") else target[7:]
        val = node.attributes.get(key)
        return ("", False) if val is None else (val, True)
    if target.startswith("${meta."):
        key = target[7:-1] if target.endswith("}") else target[7:]
        val = node.meta.get(key)
        return ("", False) if val is None else (val, True)
    if target == "${node.unique.id}":
        return node.id, True
    if target == "${node.datacenter}":
        return node.datacenter, True
    if target == "${node.unique.name}":
        return node.name, True
    if target == "${node.class}":
        return node.node_class, True
    if target == "${node.pool}":
        return node.node_pool, True
    return "", False


def is_escaped(targets: Iterable[Constraint | Affinity]) -> bool:
    """True when any constraint refers to a unique (per-node) value, so that results cannot be
    cached per computed node class."""
    for c in targets:
        for t in (c.ltarget, c.rtarget):
            if "${" in t and any(p in t for p in _ESCAPING_PREFIXES):
                return True
    return False


# --------------------------------------------------------------------------------------------
# Ordering: numbers when both sides are numbers, else lexical (Nomad's checkOrder)
# --------------------------------------------------------------------------------------------

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Go's strconv syntax, ASCII only: Python's int()/float() would also take spaces, "_" and
# non-ASCII digits, which Go rejects.
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+"
    r"|(?i:inf|infinity|nan))"
)


@lru_cache(maxsize=_CACHE_SIZE)
def _numeric(s: str) -> tuple[int | None, float | None]:
    """``s`` as a Go int64 and as a Go float64, each None when Go would not parse it."""
    as_int: int | None = None
    if _GO_INT.fullmatch(s):
        v = int(s)
        if _INT64_MIN <= v <= _INT64_MAX:
            as_int = v
    as_float: float | None = None
    if _GO_FLOAT.fullmatch(s):
        body = s.lstrip("+-")
        f = float.fromhex(s) if body[:2] in ("0x", "0X") else float(s)
        # Go reports overflow (1e400) as an error; only the literal spellings are infinite.
        if not math.isinf(f) or body[:1] in ("i", "I"):
            as_float = f
    return as_int, as_float


_ORDER_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _compare_order(op: str, left: str, right: str) -> bool:
    compare = _ORDER_OPS[op]
    li, lf = _numeric(left)
    ri, rf = _numeric(right)
    if li is not None and ri is not None:
        return compare(li, ri)
    if lf is not None and rf is not None:
        return compare(lf, rf)  # NaN compares false both ways, as in Go
    # Python compares str by code point, which is Go's byte order for UTF-8.
    return compare(left, right)


# --------------------------------------------------------------------------------------------
# Regexps
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=_CACHE_SIZE)
def _compile_regexp(pattern: str) -> re.Pattern[str] | None:
    # Nomad uses Go's RE2; Python's re with ASCII classes (\d \w \s \b) is the closest match.
    # An invalid pattern matches nothing, and is cached as such.
    try:
        return re.compile(pattern, re.ASCII)
    except (re.error, RecursionError, OverflowError):
        return None


def _regexp_match(value: str, pattern: str) -> bool:
    compiled = _compile_regexp(pattern)
    # Unanchored, like Go's MatchString.
    return compiled is not None and compiled.search(value) is not None


# --------------------------------------------------------------------------------------------
# Sets: comma-separated lists, items trimmed
# --------------------------------------------------------------------------------------------


def _items(s: str) -> set[str]:
    return {part.strip() for part in s.split(",")}


def _set_contains_all(left: str, right: str) -> bool:
    have = _items(left)
    return all(part.strip() in have for part in right.split(","))


def _set_contains_any(left: str, right: str) -> bool:
    have = _items(left)
    return any(part.strip() in have for part in right.split(","))


# --------------------------------------------------------------------------------------------
# Versions: hashicorp/go-version semantics ("version") and Semver 2.0 ordering ("semver")
# --------------------------------------------------------------------------------------------

_ID_CHARS = r"[0-9A-Za-z~-]"
_DOTTED = rf"{_ID_CHARS}+(?:\.{_ID_CHARS}+)*"
# go-version's grammar: optional "v", dotted numbers, then a pre-release that needs a dash
# only when it starts with a digit ("1.0beta1" is accepted), then "+build".
_VERSION = (
    r"v?(?P<core>[0-9]+(?:\.[0-9]+)*)"
    rf"(?:-(?P<npre>[0-9]{_ID_CHARS}*(?:\.{_ID_CHARS}+)*)|-?(?P<apre>[A-Za-z~-]{_ID_CHARS}*(?:\.{_ID_CHARS}+)*))?"
    rf"(?:\+(?P<meta>{_DOTTED}))?"
)
# The semver operand's constraints always need the dash before a pre-release.
_SEMVER = (
    r"v?(?P<core>[0-9]+(?:\.[0-9]+)*)"
    rf"(?:-(?P<npre>[0-9]{_ID_CHARS}*(?:\.{_ID_CHARS}+)*)|-(?P<apre>[A-Za-z~-]{_ID_CHARS}*(?:\.{_ID_CHARS}+)*))?"
    rf"(?:\+(?P<meta>{_DOTTED}))?"
)
_VERSION_RE = re.compile(_VERSION)
_SEMVER_RE = re.compile(_SEMVER)
_WS = r"[ \t\n\f\r]*"  # Go's \s
_VERSION_CONSTRAINT_RE = re.compile(rf"{_WS}(~>|>=|<=|!=|>|<|=)?{_WS}(.*?){_WS}")
_SEMVER_OPS = frozenset({"", "=", "!=", ">", "<", ">=", "<="})


@dataclass(frozen=True, slots=True)
class _Version:
    segments: tuple[int, ...]  # padded with zeros to at least three
    given: int  # how many segments were written (go-version's "si")
    pre: str
    meta: str


def _parse_with(pattern: re.Pattern[str], text: str) -> _Version | None:
    m = pattern.fullmatch(text)
    if m is None:
        return None
    segments = [int(s) for s in m.group("core").split(".")]
    if any(s > _INT64_MAX for s in segments):
        return None
    given = len(segments)
    segments.extend([0] * (3 - given))
    return _Version(tuple(segments), given, m.group("npre") or m.group("apre") or "", m.group("meta") or "")


@lru_cache(maxsize=_CACHE_SIZE)
def _parse_version(text: str) -> _Version | None:
    return _parse_with(_VERSION_RE, text)


def _gv_compare_part(a: str, b: str) -> int:
    # One dot-separated pre-release identifier, go-version style: an absent identifier sorts
    # below a numeric one and above an alphanumeric one.
    if a == b:
        return 0
    an, bn = _numeric(a)[0], _numeric(b)[0]
    if a == "":
        return -1 if bn is not None else 1
    if b == "":
        return 1 if an is not None else -1
    if an is None or bn is None:
        if an is not None:
            return -1  # numeric below alphanumeric
        if bn is not None:
            return 1
        return 1 if a > b else -1
    return 1 if an > bn else -1  # "01" vs "1": neither is greater, so -1 either way (go-version)


def _gv_compare_pre(a: str, b: str) -> int:
    if a == b:
        return 0
    if not a:
        return 1  # a release is above its pre-releases
    if not b:
        return -1
    pa, pb = a.split("."), b.split(".")
    for i in range(max(len(pa), len(pb))):
        c = _gv_compare_part(pa[i] if i < len(pa) else "", pb[i] if i < len(pb) else "")
        if c:
            return c
    return 0


def _gv_compare(v: _Version, c: _Version) -> int:
    """go-version's Version.Compare (metadata ignored)."""
    if v.segments == c.segments:
        return _gv_compare_pre(v.pre, c.pre)
    # Different lengths ("1.2.0.0" vs "1.2.0") compare equal when the extra segments are zero,
    # pre-releases then being ignored, as go-version does.
    sv, sc = v.segments, c.segments
    for i in range(max(len(sv), len(sc))):
        if i >= len(sv):
            return -1 if any(sc[i:]) else 0
        if i >= len(sc):
            return 1 if any(sv[i:]) else 0
        if sv[i] != sc[i]:
            return -1 if sv[i] < sc[i] else 1
    return 0


def _prerelease_ok(v: _Version, c: _Version) -> bool:
    # A pre-release version satisfies a range only when the constraint's version is a
    # pre-release of the same core version: ">= 0.6.1" does not admit "1.3.0-beta1".
    if v.pre:
        return bool(c.pre) and v.segments == c.segments
    return True


def _gv_pessimistic(v: _Version, c: _Version) -> bool:
    # "~> 1.2" means >= 1.2, < 2.0; "~> 1.2.3" means >= 1.2.3, < 1.3.0.
    if not _prerelease_ok(v, c) or (c.pre and not v.pre):
        return False
    if _gv_compare(v, c) < 0:
        return False
    n = len(c.segments)
    if n > len(v.segments):
        return False
    if any(v.segments[i] != c.segments[i] for i in range(c.given - 1)):
        return False
    return c.segments[n - 1] <= v.segments[n - 1]


_VersionCheck = Callable[[_Version, _Version], bool]

_GO_VERSION_OPS: dict[str, _VersionCheck] = {
    "": lambda v, c: _gv_compare(v, c) == 0,
    "=": lambda v, c: _gv_compare(v, c) == 0,
    "!=": lambda v, c: _gv_compare(v, c) != 0,
    ">": lambda v, c: _prerelease_ok(v, c) and _gv_compare(v, c) > 0,
    "<": lambda v, c: _prerelease_ok(v, c) and _gv_compare(v, c) < 0,
    ">=": lambda v, c: _prerelease_ok(v, c) and _gv_compare(v, c) >= 0,
    "<=": lambda v, c: _prerelease_ok(v, c) and _gv_compare(v, c) <= 0,
    "~>": _gv_pessimistic,
}


def _semver_compare_pre(a: str, b: str) -> int:
    """Semver 2.0 section 11: identifiers compared left to right; numeric ones numerically and
    below alphanumeric ones; a longer list wins when all shared identifiers are equal."""
    if a == b:
        return 0
    if not a:
        return 1
    if not b:
        return -1
    pa, pb = a.split("."), b.split(".")
    for x, y in zip(pa, pb, strict=False):
        if x == y:
            continue
        xn, yn = x.isascii() and x.isdigit(), y.isascii() and y.isdigit()
        if xn and yn:
            if int(x) != int(y):
                return -1 if int(x) < int(y) else 1
            continue  # "01" and "1": equal in value, so keep going
        if xn != yn:
            return -1 if xn else 1
        return -1 if x < y else 1
    if len(pa) != len(pb):
        return -1 if len(pa) < len(pb) else 1
    return 0


def _semver_compare(v: _Version, c: _Version) -> int:
    n = max(len(v.segments), len(c.segments))
    sv = v.segments + (0,) * (n - len(v.segments))
    sc = c.segments + (0,) * (n - len(c.segments))
    if sv != sc:
        return -1 if sv < sc else 1
    return _semver_compare_pre(v.pre, c.pre)


_SEMVER_OPS_FN: dict[str, _VersionCheck] = {
    "": lambda v, c: _semver_compare(v, c) == 0,
    "=": lambda v, c: _semver_compare(v, c) == 0,
    "!=": lambda v, c: _semver_compare(v, c) != 0,
    ">": lambda v, c: _semver_compare(v, c) > 0,
    "<": lambda v, c: _semver_compare(v, c) < 0,
    ">=": lambda v, c: _semver_compare(v, c) >= 0,
    "<=": lambda v, c: _semver_compare(v, c) <= 0,
}

_Constraints = tuple[tuple[_VersionCheck, _Version], ...]


def _parse_constraints(text: str, semver: bool) -> _Constraints | None:
    out: list[tuple[_VersionCheck, _Version]] = []
    for single in text.split(","):  # every comma-separated part must hold
        m = _VERSION_CONSTRAINT_RE.fullmatch(single)
        if m is None:
            return None
        op = m.group(1) or ""
        if semver:
            if op not in _SEMVER_OPS:
                return None  # no "~>" for semver
            version = _parse_with(_SEMVER_RE, m.group(2))
            fn = _SEMVER_OPS_FN[op]
        else:
            version = _parse_version(m.group(2))
            fn = _GO_VERSION_OPS[op]
        if version is None:
            return None
        out.append((fn, version))
    return tuple(out)


@lru_cache(maxsize=_CACHE_SIZE)
def _version_constraints(text: str) -> _Constraints | None:
    return _parse_constraints(text, semver=False)


@lru_cache(maxsize=_CACHE_SIZE)
def _semver_constraints(text: str) -> _Constraints | None:
    return _parse_constraints(text, semver=True)


def _version_match(value: str, constraint: str, semver: bool) -> bool:
    # Like Nomad, the node's value is parsed leniently (go-version's grammar) for both operands;
    # only the constraint side differs.
    version = _parse_version(value)
    if version is None:
        return False
    checks = _semver_constraints(constraint) if semver else _version_constraints(constraint)
    if checks is None:
        return False
    return all(fn(version, c) for fn, c in checks)


# --------------------------------------------------------------------------------------------
# Operands
# --------------------------------------------------------------------------------------------


_BOTH_SET: dict[str, Callable[[str, str], bool]] = {
    "regexp": _regexp_match,
    "set_contains": _set_contains_all,
    "set_contains_all": _set_contains_all,
    "set_contains_any": _set_contains_any,
    "version": lambda lval, rval: _version_match(lval, rval, semver=False),
    "semver": lambda lval, rval: _version_match(lval, rval, semver=True),
}


def check_operand(operand: str, lval: str, lfound: bool, rval: str, rfound: bool) -> bool:
    """Whether ``lval operand rval`` holds, with Nomad's treatment of unset values.

    Unknown operands never hold. ``distinct_hosts``/``distinct_property`` raise ValueError.
    """
    if operand in ("=", "==", "is"):
        return lfound and rfound and lval == rval
    if operand in ("!=", "not"):
        # Nomad: exactly one side unset -> not equal; both unset -> equal (nil == nil).
        if lfound != rfound:
            return True
        return lfound and lval != rval
    if operand in _ORDER_OPS:
        return lfound and rfound and _compare_order(operand, lval, rval)
    if operand == "is_set":
        return lfound
    if operand == "is_not_set":
        return not lfound
    check = _BOTH_SET.get(operand)
    if check is not None:
        return lfound and rfound and check(lval, rval)
    if operand in DISTINCT_OPERANDS:
        raise ValueError(f"{operand} depends on placements; it cannot be checked against one node")
    return False


# How many times matches() ran: lets tests prove the computed-class cache skips work.
_match_calls = 0


def match_calls() -> int:
    """The number of :func:`matches` evaluations since the process started."""
    return _match_calls


def matches(c: Constraint | Affinity, node: Node) -> bool:
    """Whether ``node`` satisfies the constraint (or affinity) ``c``."""
    global _match_calls
    if c.operand in DISTINCT_OPERANDS:
        raise ValueError(f"{c.operand} depends on placements; it cannot be checked against one node")
    _match_calls += 1
    lval, lfound = resolve_target(c.ltarget, node)
    rval, rfound = resolve_target(c.rtarget, node)
    return check_operand(c.operand, lval, lfound, rval, rfound)
