"""go-bexpr's grammar, read by recursive descent: a problem is a FilterError naming the column
it was found at (1-based), so that an API can answer it with a 400.

    expr       := or
    or         := and ("or" or)?
    and        := not ("and" and)?
    not        := "not" not | "(" or ")" | collection | match
    collection := ("any" | "all") selector "as" binding "{" or "}"
    binding    := name | name "," name | name "," "_" | "_" "," name
    match      := selector ("==" | "!=" | "contains" | "not contains" | "matches" | "not matches") value
                | selector ("is empty" | "is not empty" | "is nil" | "is not nil")
                | value ("in" | "not in") selector
    selector   := ident ("." ident | "." digits | "[" string "]")* | '"' json-pointer '"'
    value      := number | string ("..." or `...`) | selector (its text, as a bare word)

Word operators stand apart from what is around them by whitespace (or a parenthesis)."""

from __future__ import annotations

import re

import regex

from drover.filter.ast import And, Collection, Expression, FilterError, Match, Not, Op, Or, Selector

_IDENT = re.compile(r"[a-zA-Z][a-zA-Z0-9_/]*")
_DIGITS = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
_WS = " \t\r\n"
_WORD_CHAR = re.compile(r"[a-zA-Z0-9_/]")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}
# go-bexpr's operators after the operand, longest first, and what each needs after it.
# `in` takes the value first and the selector after; `contains` the other way round.
_WORD_OPS: tuple[tuple[tuple[str, ...], Op], ...] = (
    (("not", "contains"), Op.NOT_IN),
    (("not", "matches"), Op.NOT_MATCHES),
    (("not", "in"), Op.NOT_IN),
    (("is", "not", "empty"), Op.IS_NOT_EMPTY),
    (("is", "not", "nil"), Op.IS_NOT_NIL),
    (("is", "empty"), Op.IS_EMPTY),
    (("is", "nil"), Op.IS_NIL),
    (("contains",), Op.IN),
    (("matches",), Op.MATCHES),
    (("in",), Op.IN),
)
_UNARY = {Op.IS_EMPTY, Op.IS_NOT_EMPTY, Op.IS_NIL, Op.IS_NOT_NIL}
MAX_DEPTH = 100


def parse(text: str) -> Expression:
    """The expression `text` holds; FilterError (with its column) if it holds none."""
    return _Parser(text).expression()


class _Operand:
    """What stands before an operator: a selector, or a value when the operator is `in`."""

    def __init__(self, start: int, raw: str, selector: Selector | None) -> None:
        self.start = start
        self.raw = raw
        self.selector = selector


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0

    # ---- helpers ----
    def fail(self, message: str, at: int | None = None) -> FilterError:
        at = self.i if at is None else at
        found = repr(self.text[at : at + 12]) if at < len(self.text) else "the end"
        return FilterError(f"column {at + 1}: {message} (found {found})")

    def ws(self) -> int:
        start = self.i
        while self.i < len(self.text) and self.text[self.i] in _WS:
            self.i += 1
        return self.i - start

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.i)

    def word(self, *words: str) -> bool:
        """The words at the cursor, each standing apart; consumed (with the whitespace after)
        if so, else nothing moves."""
        start = self.i
        for n, w in enumerate(words):
            if n and not self.ws():
                self.i = start
                return False
            if not self.peek(w):
                self.i = start
                return False
            self.i += len(w)
            if self.i < len(self.text) and _WORD_CHAR.match(self.text[self.i]):
                self.i = start
                return False
        return True

    # ---- expressions ----
    def expression(self) -> Expression:
        self.ws()
        if self.i >= len(self.text):
            raise self.fail("expected an expression")
        expr = self.or_()
        self.ws()
        if self.i < len(self.text):
            if self.peek(")"):
                raise self.fail("Unmatched parentheses")
            raise self.fail('expected "and", "or" or the end')
        return expr

    def or_(self) -> Expression:
        left = self.and_()
        mark = self.i
        self.ws()
        if self.word("or"):
            self.ws()
            return Or(left, self.or_())
        self.i = mark
        return left

    def and_(self) -> Expression:
        left = self.not_()
        mark = self.i
        self.ws()
        if self.word("and"):
            self.ws()
            return And(left, self.and_())
        self.i = mark
        return left

    def not_(self) -> Expression:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH}")
        try:
            if self.word("not"):
                self.ws()
                operand = self.not_()
                # not not X is X, as go-bexpr folds it.
                return operand.operand if isinstance(operand, Not) else Not(operand)
            return self.primary()
        finally:
            self.depth -= 1

    def primary(self) -> Expression:
        if self.peek("("):
            open_at = self.i
            self.i += 1
            self.ws()
            inner = self.or_()
            self.ws()
            if not self.peek(")"):
                raise (
                    self.fail("Unmatched parentheses", open_at)
                    if self.i >= len(self.text)
                    else self.fail('expected ")", "and" or "or"')
                )
            self.i += 1
            return inner
        collection = self.collection()
        return collection if collection is not None else self.match()

    def collection(self) -> Collection | None:
        start = self.i
        if not (self.word("any") or self.word("all")):
            return None
        is_all = self.text[start] == "a" and self.text.startswith("all", start)
        self.ws()
        if self.i >= len(self.text) or not (_IDENT.match(self.text, self.i) or self.peek('"')):
            self.i = start  # `any` is a selector here (`any == 1`)
            return None
        selector = self.selector()
        self.ws()
        if not self.word("as"):
            raise self.fail('expected "as" and the names to bind')
        self.ws()
        lone, index, value = self.binding()
        self.ws()
        if not self.peek("{"):
            raise self.fail('expected "{"')
        self.i += 1
        self.ws()
        inner = self.or_()
        self.ws()
        if not self.peek("}"):
            raise self.fail('expected "}"')
        self.i += 1
        if index and index == value:
            raise self.fail(f"{index!r} names both the index and the value", start)
        return Collection(is_all, selector, inner, lone, index, value)

    def binding(self) -> tuple[str, str, str]:
        first = self.name(allow_blank=True)
        mark = self.i
        self.ws()
        if not self.peek(","):
            self.i = mark
            if first == "_":
                raise self.fail('expected "," after "_"')
            return first, "", ""
        self.i += 1
        self.ws()
        second = self.name(allow_blank=True)
        if first == "_" and second == "_":
            raise self.fail("a binding needs a name")
        return "", "" if first == "_" else first, "" if second == "_" else second

    def name(self, allow_blank: bool = False) -> str:
        if allow_blank and self.peek("_") and not _WORD_CHAR.match(self.text[self.i + 1 : self.i + 2] or " "):
            self.i += 1
            return "_"
        m = _IDENT.match(self.text, self.i)
        if not m:
            raise self.fail("expected a name")
        self.i = m.end()
        return m.group()

    # ---- match expressions ----
    def match(self) -> Match:
        operand = self.operand()
        after = self.i
        self.ws()
        for symbol, op in (("==", Op.EQUAL), ("!=", Op.NOT_EQUAL)):
            if self.peek(symbol):
                self.i += len(symbol)
                self.ws()
                return Match(self.need_selector(operand), op, self.value())
        self.i = after
        if self.ws():
            for words, op in _WORD_OPS:
                if self.word(*words):
                    return self.after_word(operand, op, value_first=words[-1] == "in")
        raise self.fail('expected an operator ("==", "!=", "in", "contains", "matches", "is empty", ...)')

    def after_word(self, operand: _Operand, op: Op, value_first: bool) -> Match:
        if op in _UNARY:
            return Match(self.need_selector(operand), op)
        if not self.ws():
            raise self.fail(f"expected whitespace after {op.value!r}")
        if value_first:
            # `value in selector`: the operand is the value, the selector follows.
            if self.i >= len(self.text) or not (_IDENT.match(self.text, self.i) or self.peek('"')):
                raise self.fail("Invalid selector")
            return Match(self.selector(), op, operand.raw)
        selector = self.need_selector(operand)
        value = self.value()
        if op in (Op.MATCHES, Op.NOT_MATCHES):
            try:
                return Match(selector, op, value, regex.compile(value))
            except regex.error as e:
                raise FilterError(f"failed to compile regular expression {value!r}: {e}") from None
        return Match(selector, op, value)

    def need_selector(self, operand: _Operand) -> Selector:
        if operand.selector is None:
            raise self.fail("expected a selector before the operator", operand.start)
        return operand.selector

    def operand(self) -> _Operand:
        start = self.i
        if self.i >= len(self.text):
            raise self.fail("expected a selector or a value")
        c = self.text[self.i]
        if c == '"':
            raw = self.string()
            pointer = _pointer(raw) if raw == "" or raw.startswith("/") else None
            return _Operand(start, raw, pointer)
        if c == "`":
            return _Operand(start, self.string(), None)
        if c == "-" or c.isdigit():
            return _Operand(start, self.number(), None)
        if _IDENT.match(self.text, self.i):
            selector = self.selector()
            return _Operand(start, str(selector), selector)
        raise self.fail("expected a selector or a value")

    def value(self) -> str:
        if self.i >= len(self.text):
            raise self.fail("expected a value")
        c = self.text[self.i]
        if c in '"`':
            return self.string()
        if c == "-" or c.isdigit():
            return self.number()
        if _IDENT.match(self.text, self.i):
            return str(self.selector())
        raise self.fail("expected a value (a number, a quoted string or a word)")

    def number(self) -> str:
        m = _NUMBER.match(self.text, self.i)
        end = m.end() if m else self.i
        if not m or (end < len(self.text) and self.text[end] not in _WS + ")}"):
            raise self.fail("Invalid number literal")
        self.i = end
        return m.group()

    def string(self) -> str:
        start = self.i
        quote = self.text[self.i]
        self.i += 1
        out: list[str] = []
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == quote:
                self.i += 1
                return "".join(out)
            if c == "\\" and quote == '"':
                out.append(self.escape())
                continue
            out.append(c)
            self.i += 1
        raise self.fail("Unterminated string literal", start)

    def escape(self) -> str:
        at = self.i
        kind = self.text[self.i + 1 : self.i + 2]
        if kind in _ESCAPES:
            self.i += 2
            return _ESCAPES[kind]
        width = {"x": 2, "u": 4, "U": 8}.get(kind)
        digits = self.text[self.i + 2 : self.i + 2 + (width or 0)]
        if width and len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
            self.i += 2 + width
            return chr(int(digits, 16))
        octal = self.text[self.i + 1 : self.i + 4]
        if len(octal) == 3 and all(d in "01234567" for d in octal) and int(octal, 8) < 256:
            self.i += 4
            return chr(int(octal, 8))
        raise self.fail("invalid escape in a string", at)

    def selector(self) -> Selector:
        if self.peek('"'):
            at = self.i
            raw = self.string()
            if raw and not raw.startswith("/"):
                raise self.fail('a quoted selector is a JSON pointer ("/a/b")', at)
            return _pointer(raw)
        first = self.name()
        path = [first]
        while True:
            if self.peek(".") and (
                m := _IDENT.match(self.text, self.i + 1) or _DIGITS.match(self.text, self.i + 1)
            ):
                path.append(m.group())
                self.i = m.end()
            elif self.peek("["):
                self.i += 1
                self.ws()
                if self.i >= len(self.text) or self.text[self.i] not in '"`':
                    raise self.fail("Invalid index")
                path.append(self.string())
                self.ws()
                if not self.peek("]"):
                    raise self.fail("Unclosed index expression")
                self.i += 1
            else:
                return Selector(tuple(path))


def _pointer(raw: str) -> Selector:
    """A JSON pointer's parts (RFC 6901: `~1` is `/`, `~0` is `~`)."""
    parts = raw.split("/")[1:] if raw else []
    return Selector(tuple(p.replace("~1", "/").replace("~0", "~") for p in parts), pointer=True)
