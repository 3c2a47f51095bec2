"""HCL source to a body of attributes and blocks, with python-hcl2's parse tree for every
expression. python-hcl2 keeps a heredoc as one token; its body is read here as a template."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import hcl2
from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from drover.jobspec.errors import JobspecError

Node = Tree[Any]


@dataclass
class Attribute:
    name: str
    expr: Node
    line: int


@dataclass
class Block:
    type: str
    labels: list[str]
    body: Body
    line: int


@dataclass
class Body:
    attributes: list[Attribute] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)


_READABLE = {"NAME": "a name", "RBRACE": '"}"', "LBRACE": '"{"', "EQ": '"="', "DBLQUOTE": "a quote",
             "NL_OR_COMMENT": "a new line", "RSQB": '"]"', "RPAR": '")"', "COMMA": '","'}  # fmt: skip


def parse_tree(src: str, filename: str, first_line: int = 1) -> Node:
    """The parse tree of `src`; a syntax error is a JobspecError naming the file and line."""
    try:
        tree: Node = hcl2.parses_to_tree("\n" * (first_line - 1) + src)
    except UnexpectedInput as e:
        # python-hcl2 parses the text with a new line added: an error at the end is on the last line.
        line = min(e.line, first_line - 1 + src.count("\n") + (0 if src.endswith("\n") else 1))
        raise JobspecError([f"{filename}:{line}: syntax: {_syntax_message(e)}"]) from None
    return tree


def _syntax_message(e: UnexpectedInput) -> str:
    if isinstance(e, UnexpectedToken):
        if e.token.type == "$END":
            return "unexpected end of file (is a brace or quote not closed?)"
        expected = sorted({_READABLE.get(t, "") for t in e.expected} - {""})
        hint = f"; expected {' or '.join(expected)}" if expected and len(expected) <= 3 else ""
        return f"unexpected {str(e.token).strip()!r} at column {e.column}{hint}"
    if isinstance(e, UnexpectedCharacters):
        return f"unexpected character {e.char!r} at column {e.column}"
    if isinstance(e, UnexpectedEOF):
        return "unexpected end of file"
    return str(e).splitlines()[0]


def parse_body(src: str, filename: str) -> Body:
    """The top-level body of an HCL file."""
    return to_body(parse_tree(src, filename).children[0], filename)


def parts(node: Node) -> list[Any]:
    """A node's children without new lines and comments."""
    return [c for c in node.children if not (isinstance(c, Tree) and c.data == "new_line_or_comment")]


def name_of(node: Any) -> str:
    """The text of an identifier, keyword or literal used as a name."""
    if isinstance(node, Token):
        return str(node)
    return str(node.children[0])


def to_body(node: Node, filename: str) -> Body:
    body = Body()
    seen: dict[str, int] = {}
    for child in parts(node):
        if child.data == "attribute":
            name = name_of(child.children[0])
            line = child.meta.line
            if name in seen:
                raise JobspecError([f"{filename}:{line}: {name}: argument already set at line {seen[name]}"])
            seen[name] = line
            body.attributes.append(Attribute(name, parts(child)[2], line))
        else:
            items = parts(child)
            labels = [string_literal(x) if x.data == "string" else name_of(x) for x in items[1:-3]]
            inner = to_body(items[-2], filename)
            body.blocks.append(Block(name_of(items[0]), labels, inner, child.meta.line))
    return body


def string_literal(node: Node) -> str:
    """A quoted string without interpolations (a block label)."""
    return "".join(unescape(str(p.children[0])) for p in node.children if isinstance(p, Tree))


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)


def unescape(text: str) -> str:
    """A quoted string's literal text with its escapes read (``$${`` and ``%%{`` too)."""
    if text.startswith(("$${", "%%{")):
        return text[1:]

    def one(m: re.Match[str]) -> str:
        s = m.group(1)
        if s[0] in "uU":
            return chr(int(s[1:], 16))
        return _ESCAPES.get(s, "\\" + s)

    return _ESCAPE.sub(one, text)


def heredoc(token: Token, filename: str) -> Node:
    """A heredoc's body as a template tree: its literal text quoted, its interpolations and
    directives as written, parsed at the lines they stand on."""
    text = str(token)
    trim = text.startswith("<<-")
    lines = text.split("\n")
    body = [line.rstrip("\r") for line in lines[1:-2]]
    if trim:
        indents = [len(line) - len(line.lstrip(" \t")) for line in body if line.strip()]
        cut = min(indents, default=0)
        body = [line[cut:] for line in body]
    content = "".join(line + "\n" for line in body)
    quoted = _quote_template(content)
    tree = parse_tree(f'x = "{quoted}"\n', filename, first_line=(token.line or 1) + 1)
    attr = parts(tree.children[0])[0]
    expr: Node = parts(attr)[2]
    return expr


def _quote_template(text: str) -> str:
    """Template text as the inside of a quoted string: literal text escaped, every ``${...}``
    and ``%{...}`` kept as written."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith(("$${", "%%{"), i):
            out.append(text[i : i + 3])
            i += 3
        elif text.startswith(("${", "%{"), i):
            end = _closing_brace(text, i + 2)
            out.append(text[i:end])
            i = end
        else:
            ch = text[i]
            out.append("\\" + ch if ch in '"\\' else ch)
            i += 1
    return "".join(out)


def _closing_brace(text: str, i: int) -> int:
    """The index just past the brace closing a sequence opened before `i`."""
    depth, quote = 1, False
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)
