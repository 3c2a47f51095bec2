"""The lexer of Go's text/template: text and actions between delimiters, with trim markers
(``{{- `` and `` -}}`` eat the whitespace beside them), comments (``{{/* ... */}}``, which
must sit against their delimiters) and the tokens inside an action."""

from __future__ import annotations

import enum
from dataclasses import dataclass

SPACE_CHARS = " \t\r\n"
KEYWORDS = {"block", "break", "continue", "define", "else", "end", "if", "range", "nil", "template", "with"}


class Kind(enum.Enum):
    TEXT = "text"
    LEFT_DELIM = "left delim"
    RIGHT_DELIM = "right delim"
    SPACE = "space"
    IDENTIFIER = "identifier"
    KEYWORD = "keyword"
    FIELD = "field"
    VARIABLE = "variable"
    DOT = "."
    BOOL = "bool"
    NUMBER = "number"
    CHAR_CONSTANT = "character constant"
    STRING = "string"
    RAW_STRING = "raw string"
    PIPE = "|"
    LEFT_PAREN = "("
    RIGHT_PAREN = ")"
    DECLARE = ":="
    ASSIGN = "="
    CHAR = "char"
    EOF = "EOF"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    value: str
    pos: int
    line: int

    def describe(self) -> str:
        """The token as Go's parser names it in an ``unexpected`` error."""
        if self.kind is Kind.EOF:
            return "EOF"
        if self.kind is Kind.ERROR:
            return self.value
        if self.kind is Kind.KEYWORD:
            return f"<{self.value}>"
        if len(self.value) > 10:
            return f"{_go_quote(self.value[:10])}..."
        return f"{_go_quote(self.value)}"


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _is_alnum(c: str) -> bool:
    return c == "_" or c.isalnum()


class Lexer:
    """Scans a whole template into tokens; an error ends the stream with an ERROR token."""

    def __init__(self, text: str, left: str = "{{", right: str = "}}") -> None:
        self.text = text
        self.left = left or "{{"
        self.right = right or "}}"
        self.pos = 0
        self.line = 1
        self._counted = 0
        self.tokens: list[Token] = []
        self.paren_depth = 0

    def _line_at(self, pos: int) -> int:
        # Tokens come in order: count only the newlines since the last one.
        if pos >= self._counted:
            self.line += self.text.count("\n", self._counted, pos)
        else:
            self.line -= self.text.count("\n", pos, self._counted)
        self._counted = pos
        return self.line

    def _emit(self, kind: Kind, start: int, value: str | None = None) -> None:
        text = self.text[start : self.pos] if value is None else value
        self.tokens.append(Token(kind, text, start, self._line_at(start)))

    def _error(self, message: str) -> None:
        self.tokens.append(Token(Kind.ERROR, message, self.pos, self._line_at(self.pos)))

    def run(self) -> list[Token]:
        while self._lex_text():
            if not self._lex_action():
                return self.tokens
        self._emit(Kind.EOF, len(self.text), "")
        return self.tokens

    # --- text and delimiters -------------------------------------------------------------

    def _lex_text(self) -> bool:
        """Text up to the next left delimiter; whether one was found."""
        at = self.text.find(self.left, self.pos)
        if at < 0:
            if self.pos < len(self.text):
                self._emit(Kind.TEXT, self.pos, self.text[self.pos :])
            self.pos = len(self.text)
            return False
        text = self.text[self.pos : at]
        if self._left_trim(at + len(self.left)):
            text = text.rstrip(SPACE_CHARS)
        if text:
            self._emit(Kind.TEXT, self.pos, text)
        self.pos = at
        return True

    def _left_trim(self, at: int) -> bool:
        return self.text[at : at + 1] == "-" and self.text[at + 1 : at + 2] in tuple(SPACE_CHARS)

    def _at_right_delim(self) -> tuple[bool, bool]:
        """Whether the right delimiter starts here, and whether it carries a trim marker."""
        s = self.text
        p = self.pos
        if s[p : p + 1] in tuple(SPACE_CHARS) and s[p + 1 : p + 2] == "-" and s.startswith(self.right, p + 2):
            return True, True
        return s.startswith(self.right, p), False

    def _skip_leading_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in SPACE_CHARS:
            self.pos += 1

    def _lex_action(self) -> bool:
        """A left delimiter, the action's tokens and its right delimiter (or a comment)."""
        start = self.pos
        self.pos += len(self.left)
        trim = self._left_trim(self.pos)
        after = 2 if trim else 0
        if self.text.startswith("/*", self.pos + after):
            self.pos += after
            return self._lex_comment()
        self._emit(Kind.LEFT_DELIM, start, self.left)
        self.pos += after
        self.paren_depth = 0
        while True:
            delim, trim_right = self._at_right_delim()
            if delim:
                if self.paren_depth:
                    self._error("unclosed left paren")
                    return False
                start = self.pos
                if trim_right:
                    self.pos += 2
                self.pos += len(self.right)
                self._emit(Kind.RIGHT_DELIM, start, self.right)
                if trim_right:
                    self._skip_leading_space()
                return True
            if not self._lex_inside():
                return False

    def _lex_comment(self) -> bool:
        self.pos += 2
        end = self.text.find("*/", self.pos)
        if end < 0:
            self._error("unclosed comment")
            return False
        self.pos = end + 2
        delim, trim = self._at_right_delim()
        if not delim:
            self._error("comment ends before closing delimiter")
            return False
        self.pos += (2 if trim else 0) + len(self.right)
        if trim:
            self._skip_leading_space()
        return True

    # --- inside an action ----------------------------------------------------------------

    def _lex_inside(self) -> bool:
        s = self.text
        start = self.pos
        if self.pos >= len(s):
            self._error("unclosed action")
            return False
        c = s[self.pos]
        if c in SPACE_CHARS:
            return self._lex_space()
        self.pos += 1
        if c == "=":
            self._emit(Kind.ASSIGN, start)
        elif c == ":":
            if s[self.pos : self.pos + 1] != "=":
                self._error("expected :=")
                return False
            self.pos += 1
            self._emit(Kind.DECLARE, start)
        elif c == "|":
            self._emit(Kind.PIPE, start)
        elif c == '"':
            return self._lex_quote(start, '"', Kind.STRING, "unterminated quoted string")
        elif c == "`":
            return self._lex_raw(start)
        elif c == "'":
            return self._lex_quote(start, "'", Kind.CHAR_CONSTANT, "unterminated character constant")
        elif c == "$":
            return self._lex_word(start, Kind.VARIABLE)
        elif c == "." and not s[self.pos : self.pos + 1].isdigit():
            return self._lex_word(start, Kind.FIELD)
        elif c in "+-." or c.isdigit():
            self.pos = start
            return self._lex_number()
        elif _is_alnum(c):
            self.pos = start
            return self._lex_identifier()
        elif c == "(":
            self.paren_depth += 1
            self._emit(Kind.LEFT_PAREN, start)
        elif c == ")":
            self.paren_depth -= 1
            if self.paren_depth < 0:
                self._error("unexpected right paren")
                return False
            self._emit(Kind.RIGHT_PAREN, start)
        elif c.isascii() and c.isprintable():
            self._emit(Kind.CHAR, start)
        else:
            self._error(f"unrecognized character in action: U+{ord(c):04X}")
            return False
        return True

    def _lex_space(self) -> bool:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in SPACE_CHARS:
            # A space before "-}}" belongs to the trim marker.
            if self.text[self.pos + 1 : self.pos + 2] == "-" and self.text.startswith(
                self.right, self.pos + 2
            ):
                break
            self.pos += 1
        if self.pos > start:
            self._emit(Kind.SPACE, start)
        return True

    def _at_terminator(self) -> bool:
        if self.pos >= len(self.text):
            return True
        c = self.text[self.pos]
        return c in SPACE_CHARS or c in ".,|:()" or self.text.startswith(self.right, self.pos)

    def _lex_word(self, start: int, kind: Kind) -> bool:
        """A field (``.Name``) or variable (``$name``); ``.`` and ``$`` alone are dot and root."""
        if self._at_terminator():
            self._emit(Kind.DOT if kind is Kind.FIELD else Kind.VARIABLE, start)
            return True
        while self.pos < len(self.text) and _is_alnum(self.text[self.pos]):
            self.pos += 1
        if not self._at_terminator():
            self._error(f"bad character U+{ord(self.text[self.pos]):04X} {self.text[self.pos]!r}")
            return False
        self._emit(kind, start)
        return True

    def _lex_identifier(self) -> bool:
        start = self.pos
        while self.pos < len(self.text) and _is_alnum(self.text[self.pos]):
            self.pos += 1
        if not self._at_terminator():
            self._error(f"bad character U+{ord(self.text[self.pos]):04X} {self.text[self.pos]!r}")
            return False
        word = self.text[start : self.pos]
        if word in KEYWORDS:
            self._emit(Kind.KEYWORD, start)
        elif word in ("true", "false"):
            self._emit(Kind.BOOL, start)
        else:
            self._emit(Kind.IDENTIFIER, start)
        return True

    def _accept(self, chars: str) -> bool:
        if self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1
            return True
        return False

    def _accept_run(self, chars: str) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1

    def _lex_number(self) -> bool:
        start = self.pos
        self._accept("+-")
        digits = "0123456789_"
        if self._accept("0"):
            if self._accept("xX"):
                digits = "0123456789abcdefABCDEF_"
            elif self._accept("oO"):
                digits = "01234567_"
            elif self._accept("bB"):
                digits = "01_"
        self._accept_run(digits)
        if self._accept("."):
            self._accept_run(digits)
        if (len(digits) == 10 + 1 and self._accept("eE")) or (len(digits) > 11 and self._accept("pP")):
            self._accept("+-")
            self._accept_run("0123456789_")
        self._accept("i")
        if self.pos < len(self.text) and _is_alnum(self.text[self.pos]):
            self.pos += 1
            self._error(f"bad number syntax: {_go_quote(self.text[start : self.pos])}")
            return False
        self._emit(Kind.NUMBER, start)
        return True

    def _lex_quote(self, start: int, quote: str, kind: Kind, unterminated: str) -> bool:
        s = self.text
        while True:
            if self.pos >= len(s) or s[self.pos] == "\n":
                self._error(unterminated)
                return False
            c = s[self.pos]
            self.pos += 1
            if c == "\\":
                if self.pos >= len(s) or s[self.pos] == "\n":
                    self._error(unterminated)
                    return False
                self.pos += 1
            elif c == quote:
                break
        self._emit(kind, start)
        return True

    def _lex_raw(self, start: int) -> bool:
        end = self.text.find("`", self.pos)
        if end < 0:
            self._error("unterminated raw quoted string")
            return False
        self.pos = end + 1
        self._emit(Kind.RAW_STRING, start)
        return True


def lex(text: str, left: str = "{{", right: str = "}}") -> list[Token]:
    return Lexer(text, left, right).run()
