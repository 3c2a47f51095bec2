"""Go's time.Format layouts (the reference time Mon Jan 2 15:04:05 MST 2006), for
consul-template's ``timestamp``."""

from __future__ import annotations

from datetime import datetime

# Longest first, so "2006" is not read as "2" then "006".
_TOKENS = [
    "January", "Monday", "Jan", "Mon", "MST", "2006", "Z07:00", "-07:00", "Z0700", "-0700", "Z07", "-07",
    ".000000000", ".000000", ".000", "_2", "01", "02", "03", "04", "05", "06", "15", "PM", "pm", "1", "2", "3", "4", "5",
]  # fmt: skip


def _zone(t: datetime, token: str) -> str:
    offset = t.utcoffset()
    seconds = int(offset.total_seconds()) if offset is not None else 0
    if token.startswith("Z") and seconds == 0:
        return "Z"
    sign = "-" if seconds < 0 else "+"
    h, m = divmod(abs(seconds) // 60, 60)
    body = token.lstrip("Z-")
    if body == "07:00":
        return f"{sign}{h:02d}:{m:02d}"
    if body == "0700":
        return f"{sign}{h:02d}{m:02d}"
    return f"{sign}{h:02d}"


def _render(t: datetime, token: str) -> str:
    values = {
        "January": t.strftime("%B"), "Monday": t.strftime("%A"), "Jan": t.strftime("%b"), "Mon": t.strftime("%a"),
        "MST": t.tzname() or "UTC", "2006": f"{t.year:04d}", "06": f"{t.year % 100:02d}",
        "01": f"{t.month:02d}", "1": str(t.month), "02": f"{t.day:02d}", "2": str(t.day), "_2": f"{t.day:>2d}",
        "15": f"{t.hour:02d}", "03": f"{(t.hour % 12) or 12:02d}", "3": str((t.hour % 12) or 12),
        "04": f"{t.minute:02d}", "4": str(t.minute), "05": f"{t.second:02d}", "5": str(t.second),
        "PM": "PM" if t.hour >= 12 else "AM", "pm": "pm" if t.hour >= 12 else "am",
        ".000": f".{t.microsecond // 1000:03d}", ".000000": f".{t.microsecond:06d}",
        ".000000000": f".{t.microsecond:06d}000",
    }  # fmt: skip
    if token in values:
        return values[token]
    return _zone(t, token)


def go_time_format(t: datetime, layout: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(layout):
        for token in _TOKENS:
            if layout.startswith(token, i):
                out.append(_render(t, token))
                i += len(token)
                break
        else:
            out.append(layout[i])
            i += 1
    return "".join(out)
