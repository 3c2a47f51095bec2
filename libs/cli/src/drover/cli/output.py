"""How the verbs print, as Nomad's CLI does: columns two spaces apart, `Key = value` blocks
aligned on the `=`, IDs cut to 8 characters, times as dates or ages; and the raw API JSON for
`-json`. Pure functions of their input (the clock is handed in)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

SHORT_ID = 8
NS_PER_S = 1_000_000_000


def short(value: str, verbose: bool = False) -> str:
    """An ID as Nomad lists it: its first 8 characters, or whole with -verbose."""
    return value if verbose else value[:SHORT_ID]


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns left-aligned, two spaces apart, the header first (Nomad's formatList)."""
    lines = [[str(c) for c in header], *([_cell(c) for c in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def kv(pairs: Iterable[tuple[str, Any]]) -> str:
    """`Key = value` lines with the `=` aligned (Nomad's formatKV)."""
    items = [(k, _cell(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(f"{k.ljust(width)} = {v}".rstrip() for k, v in items)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def as_json(doc: Any) -> str:
    """The API's JSON, indented as `nomad ... -json` prints it."""
    return json.dumps(doc, indent=4)


def date(ns: int) -> str:
    """A Unix time in nanoseconds as an RFC 3339 date in UTC ("" for none)."""
    if not ns:
        return ""
    return datetime.fromtimestamp(ns / NS_PER_S, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds: float) -> str:
    """A duration as Go prints a rounded one: "1h2m3s", "45s", "0s"."""
    total = max(0, round(seconds))
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m}m{s}s"
    return f"{m}m{s}s" if m else f"{s}s"


def ago(ns: int, now: float | None = None) -> str:
    """How long before `now` (seconds since the epoch) a time in nanoseconds was: "3m2s ago";
    older than a day, the date."""
    if not ns:
        return ""
    now = time.time() if now is None else now
    delta = now - ns / NS_PER_S
    if delta > 86400:
        return date(ns)
    return f"{duration(delta)} ago"


def in_time(ns: int, now: float | None = None) -> str:
    """A time to come as "<date> (<duration> from now)" (a deadline)."""
    if not ns:
        return ""
    now = time.time() if now is None else now
    left = ns / NS_PER_S - now
    return f"{date(ns)} ({duration(left)} from now)" if left > 0 else date(ns)


def failed_placements(failed: dict[str, dict[str, Any]]) -> list[str]:
    """Why each group of an eval's FailedTGAllocs could not be placed, as Nomad explains it:
    a heading per group and a `* ...` line per reason."""
    lines: list[str] = []
    for group in sorted(failed):
        metric = failed[group] or {}
        n = 1 + int(metric.get("CoalescedFailures") or 0)
        lines.append(f'Task Group "{group}" (failed to place {n} allocation{"" if n == 1 else "s"}):')
        lines += [f"  * {reason}" for reason in placement_reasons(metric)]
    return lines


def placement_reasons(metric: dict[str, Any]) -> list[str]:
    """The reasons in one group's AllocMetric: no nodes, filters, exhausted dimensions."""
    reasons: list[str] = []
    available = metric.get("NodesAvailable") or {}
    if metric.get("NodesEvaluated", 0) == 0 and not any(available.values()):
        reasons.append("No nodes were eligible for evaluation")
    for dc, count in sorted(available.items()):
        if count == 0:
            reasons.append(f'No nodes are available in datacenter "{dc}"')
    for cls, count in sorted((metric.get("ClassFiltered") or {}).items()):
        reasons.append(f'Class "{cls}": {count} nodes excluded by filter')
    for constraint, count in sorted((metric.get("ConstraintFiltered") or {}).items()):
        reasons.append(f'Constraint "{constraint}": {count} nodes excluded by filter')
    if metric.get("NodesExhausted"):
        reasons.append(f"Resources exhausted on {metric['NodesExhausted']} nodes")
    for cls, count in sorted((metric.get("ClassExhausted") or {}).items()):
        if cls:
            reasons.append(f'Class "{cls}" exhausted on {count} nodes')
    for dim, count in sorted((metric.get("DimensionExhausted") or {}).items()):
        reasons.append(f'Dimension "{dim}" exhausted on {count} nodes')
    for quota in metric.get("QuotaExhausted") or []:
        reasons.append(f'Quota limit hit "{quota}"')
    return reasons or ["No reason given"]
