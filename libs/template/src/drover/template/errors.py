"""A template's errors, worded as Go's text/template words them: a parse error names the
template and the line (``template: name:3: function "foo" not defined``), an execution error
the line and column of the node at fault and the node itself
(``template: name:3:5: executing "name" at <.Port>: ...``)."""

from __future__ import annotations


class TemplateError(Exception):
    """A template that cannot be parsed or executed."""

    def __init__(self, message: str, name: str = "", line: int = 0, column: int | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.line = line
        self.column = column


class ParseError(TemplateError):
    """A template that does not parse: its text is wrong, whatever the data."""


class ExecError(TemplateError):
    """A template that parsed but failed on its data (a bad call, a missing key, a bad type)."""


def parse_error(name: str, line: int, message: str) -> ParseError:
    return ParseError(f"template: {name}:{line}: {message}", name, line)


def line_and_column(text: str, pos: int) -> tuple[int, int]:
    """A byte offset's 1-based line and its 0-based column, as Go's ErrorContext counts them."""
    before = text[:pos]
    line = 1 + before.count("\n")
    last = before.rfind("\n")
    return line, pos if last < 0 else pos - last - 1
