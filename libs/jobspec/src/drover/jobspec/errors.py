"""Problems with a jobspec: each names the file, the line and the field."""

from __future__ import annotations

from dataclasses import dataclass, field


class JobspecError(ValueError):
    """A jobspec that does not parse or evaluate; `problems` lists every one found, each
    ``file:line: field: message``."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class EvalError(Exception):
    """An expression that cannot be evaluated, at `line` (0: the line of the field itself)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class FunctionError(Exception):
    """A function given arguments it cannot work with."""


@dataclass
class Problems:
    """The problems found so far, in the order found."""

    items: list[tuple[str, int, str]] = field(default_factory=list)

    def add(self, filename: str, line: int, where: str, message: str) -> None:
        self.items.append((filename, line, f"{filename}:{line}: {where}: {message}"))

    def extend(self, problems: list[str]) -> None:
        self.items.extend(("", 0, p) for p in problems)

    def raise_if_any(self) -> None:
        """Raise JobspecError with the problems found, by file and line, each once."""
        if self.items:
            ordered = sorted(self.items, key=lambda p: (p[0], p[1]))
            raise JobspecError(list(dict.fromkeys(p[2] for p in ordered)))
