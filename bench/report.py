"""Where every benchmark's results go: printed, and written as JSON to --out."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def write(result: dict[str, Any], out: str) -> None:
    text = json.dumps(result, indent=2)
    print(text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
