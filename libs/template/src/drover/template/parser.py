"""The parser of Go's text/template: a token stream into a tree per template (the main one and
each ``define``/``block``), with Go's checks at parse time: every function must be known and
every variable declared, ``break``/``continue`` only inside ``range``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from drover.template.errors import ParseError, parse_error
from drover.template.lexer import Kind, Token, lex
from drover.template.nodes import (
    ActionNode,
    BoolNode,
    BranchNode,
    BreakNode,
    ChainNode,
    CommandNode,
    ContinueNode,
    DotNode,
    ElseNode,
    EndNode,
    FieldNode,
    IdentifierNode,
    ListNode,
    NilNode,
    Node,
    NumberNode,
    PipeNode,
    StringNode,
    TemplateNode,
    TextNode,
    VariableNode,
)

OPERAND_KINDS = {
    Kind.BOOL,
    Kind.CHAR_CONSTANT,
    Kind.DOT,
    Kind.FIELD,
    Kind.IDENTIFIER,
    Kind.NUMBER,
    Kind.RAW_STRING,
    Kind.STRING,
    Kind.VARIABLE,
    Kind.LEFT_PAREN,
}
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_OCTAL = re.compile(r"^[+-]?0[0-7_]+$")


def go_unquote(token: str) -> str:
    """A Go string literal's value (interpreted with its escapes, or raw between backquotes)."""
    quote = token[0]
    body = token[1:-1]
    if quote == "`":
        return body.replace("\r", "")
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e == quote:
            out.append(e)
            i += 2
        elif e in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[e]
            digits = body[i + 2 : i + 2 + size]
            if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError("invalid syntax")
            out.append(chr(int(digits, 16)))
            i += 2 + size
        elif e in "01234567":
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not all(d in "01234567" for d in digits):
                raise ValueError("invalid syntax")
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise ValueError("invalid syntax")
    return "".join(out)


def _parse_int(text: str) -> int | None:
    t = text.replace("_", "")
    try:
        if _OCTAL.match(text):
            return int(t, 8)
        return int(t, 0)
    except ValueError:
        return None


def number_node(token: Token) -> NumberNode:
    """A numeric constant as Go's parse.newNumber reads it."""
    text = token.value
    node = NumberNode(token.pos, token.line, text)
    if token.kind is Kind.CHAR_CONSTANT:
        try:
            value = go_unquote(text)
        except ValueError:
            raise ValueError(f"malformed character constant: {text}") from None
        if len(value) != 1:
            raise ValueError(f"malformed character constant: {text}")
        node.is_char = node.is_int = node.is_float = True
        node.int_value = ord(value)
        node.float_value = float(node.int_value)
        return node
    if text.endswith("i"):
        raise ValueError(f"complex numbers are not supported: {text}")
    value_int = _parse_int(text)
    if value_int is not None:
        if not -(2**63) <= value_int < 2**64:
            raise ValueError(f'integer overflow: "{text}"')
        node.is_int = value_int < 2**63
        node.int_value = value_int
        node.is_float = True
        node.float_value = float(value_int)
        return node
    try:
        f = float.fromhex(text) if text.lstrip("+-")[:2] in ("0x", "0X") else float(text.replace("_", ""))
    except ValueError:
        raise ValueError(f'illegal number syntax: "{text}"') from None
    if not any(c in text for c in ".eEpP"):
        raise ValueError(f'integer overflow: "{text}"')
    node.is_float = True
    node.float_value = f
    if f == int(f) and abs(f) < 2**63:
        node.is_int = True
        node.int_value = int(f)
    return node


class Tree:
    """One named template: its list of nodes."""

    def __init__(self, name: str, root: ListNode) -> None:
        self.name = name
        self.root = root


class Parser:
    """Parses one text into its trees; ``on_unknown_function`` sees each function the registry
    does not know (Go stops at the first; a check collects them all)."""

    def __init__(
        self,
        name: str,
        text: str,
        left: str,
        right: str,
        known: Callable[[str], bool],
        on_unknown_function: Callable[[ParseError], None] | None = None,
    ) -> None:
        self.name = name
        self.tokens = lex(text, left, right)
        self.i = 0
        self.known = known
        self.on_unknown = on_unknown_function
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.line = 1
        self.action_line = 0
        self.trees: dict[str, Tree] = {}

    # --- tokens ----------------------------------------------------------------------------

    def next(self) -> Token:
        tok = self.tokens[min(self.i, len(self.tokens) - 1)]
        self.i += 1
        self.line = tok.line
        return tok

    def backup(self, n: int = 1) -> None:
        self.i -= n

    def peek(self) -> Token:
        return self.tokens[min(self.i, len(self.tokens) - 1)]

    def next_non_space(self) -> Token:
        tok = self.next()
        while tok.kind is Kind.SPACE:
            tok = self.next()
        return tok

    def peek_non_space(self) -> Token:
        tok = self.next_non_space()
        self.backup()
        return tok

    def error(self, message: str) -> ParseError:
        return parse_error(self.name, self.line, message)

    def unexpected(self, tok: Token, context: str) -> ParseError:
        if tok.kind is Kind.ERROR:
            extra = ""
            if self.action_line and self.action_line != tok.line:
                extra = f" in action started at {self.name}:{self.action_line}"
                if tok.value.endswith(" action"):
                    extra = extra[len(" in action") :]
            return self.error(tok.value + extra)
        return self.error(f"unexpected {tok.describe()} in {context}")

    def expect(self, kind: Kind, context: str) -> Token:
        tok = self.next_non_space()
        if tok.kind is not kind:
            raise self.unexpected(tok, context)
        return tok

    # --- templates -------------------------------------------------------------------------

    def parse(self) -> dict[str, Tree]:
        root = ListNode(0, 1)
        while self.peek().kind is not Kind.EOF:
            if self.peek().kind is Kind.LEFT_DELIM:
                at = self.i
                self.next()
                after = self.next_non_space()
                if after.kind is Kind.KEYWORD and after.value == "define":
                    self.parse_definition()
                    continue
                self.i = at
            node = self.text_or_action()
            if isinstance(node, EndNode | ElseNode):
                raise self.error(f"unexpected {node}")
            root.nodes.append(node)
        self._add(Tree(self.name, root))
        return self.trees

    def _add(self, tree: Tree) -> None:
        existing = self.trees.get(tree.name)
        # As Go: a definition replaces an empty one (a later non-empty one is an error).
        if existing is not None and existing.root.nodes and tree.root.nodes:
            raise self.error(f"template: multiple definition of template {tree.name!r}")
        if existing is None or tree.root.nodes:
            self.trees[tree.name] = tree

    def _sub_tree(self, name: str, context: str) -> Tree:
        saved = self.vars, self.range_depth
        self.vars, self.range_depth = ["$"], 0
        body, end = self.item_list()
        if not isinstance(end, EndNode):
            raise self.error(f"unexpected {end} in {context}")
        self.vars, self.range_depth = saved
        return Tree(name, body)

    def parse_definition(self) -> None:
        context = "define clause"
        tok = self.next_non_space()
        if tok.kind not in (Kind.STRING, Kind.RAW_STRING):
            raise self.unexpected(tok, context)
        name = self._unquote(tok)
        self.expect(Kind.RIGHT_DELIM, context)
        self._add(self._sub_tree(name, context))

    def _unquote(self, tok: Token) -> str:
        try:
            return go_unquote(tok.value)
        except ValueError as e:
            raise self.error(str(e)) from None

    def item_list(self) -> tuple[ListNode, Node]:
        tok = self.peek_non_space()
        body = ListNode(tok.pos, tok.line)
        while self.peek_non_space().kind is not Kind.EOF:
            node = self.text_or_action()
            if isinstance(node, EndNode | ElseNode):
                return body, node
            body.nodes.append(node)
        raise self.error("unexpected EOF")

    def text_or_action(self) -> Node:
        tok = self.next_non_space()
        if tok.kind is Kind.TEXT:
            return TextNode(tok.pos, tok.line, tok.value)
        if tok.kind is Kind.LEFT_DELIM:
            self.action_line = tok.line
            try:
                return self.action()
            finally:
                self.action_line = 0
        raise self.unexpected(tok, "input")

    def action(self) -> Node:
        tok = self.next_non_space()
        if tok.kind is Kind.KEYWORD:
            word = tok.value
            if word == "block":
                return self.block_control()
            if word in ("break", "continue"):
                after = self.next_non_space()
                if after.kind is not Kind.RIGHT_DELIM:
                    raise self.unexpected(after, "{{" + word + "}}")
                if not self.range_depth:
                    raise self.error("{{" + word + "}} outside {{range}}")
                return (BreakNode if word == "break" else ContinueNode)(tok.pos, tok.line)
            if word == "else":
                return self.else_control()
            if word == "end":
                end = self.expect(Kind.RIGHT_DELIM, "end")
                return EndNode(end.pos, end.line)
            if word in ("if", "range", "with"):
                return self.branch(word, tok)
            if word == "template":
                return self.template_control()
        self.backup()
        tok = self.peek()
        return ActionNode(tok.pos, tok.line, self.pipeline("command", Kind.RIGHT_DELIM))

    def else_control(self) -> Node:
        peek = self.peek_non_space()
        if peek.kind is Kind.KEYWORD and peek.value in ("if", "with"):
            # "else if" / "else with": the keyword is left for the enclosing branch.
            return ElseNode(peek.pos, peek.line)
        tok = self.expect(Kind.RIGHT_DELIM, "else")
        return ElseNode(tok.pos, tok.line)

    def branch(self, keyword: str, tok: Token) -> BranchNode:
        mark = len(self.vars)
        try:
            pipe = self.pipeline(keyword, Kind.RIGHT_DELIM)
            if keyword == "range":
                self.range_depth += 1
            body, end = self.item_list()
            if keyword == "range":
                self.range_depth -= 1
            else_body: ListNode | None = None
            if isinstance(end, ElseNode):
                peek = self.peek()
                if keyword in ("if", "with") and peek.kind is Kind.KEYWORD and peek.value == keyword:
                    inner_tok = self.next()
                    else_body = ListNode(end.pos, end.line, [self.branch(keyword, inner_tok)])
                else:
                    else_body, end = self.item_list()
                    if not isinstance(end, EndNode):
                        raise self.error(f"expected end; found {end}")
            return BranchNode(tok.pos, tok.line, keyword, pipe, body, else_body)
        finally:
            del self.vars[mark:]

    def template_control(self) -> TemplateNode:
        context = "template clause"
        tok = self.next_non_space()
        if tok.kind not in (Kind.STRING, Kind.RAW_STRING):
            raise self.unexpected(tok, context)
        name = self._unquote(tok)
        pipe: PipeNode | None = None
        if self.next_non_space().kind is not Kind.RIGHT_DELIM:
            self.backup()
            pipe = self.pipeline(context, Kind.RIGHT_DELIM)
        return TemplateNode(tok.pos, tok.line, name, pipe)

    def block_control(self) -> TemplateNode:
        context = "block clause"
        tok = self.next_non_space()
        if tok.kind not in (Kind.STRING, Kind.RAW_STRING):
            raise self.unexpected(tok, context)
        name = self._unquote(tok)
        pipe = self.pipeline(context, Kind.RIGHT_DELIM)
        self._add(self._sub_tree(name, context))
        return TemplateNode(tok.pos, tok.line, name, pipe)

    # --- pipelines -------------------------------------------------------------------------

    def pipeline(self, context: str, end: Kind) -> PipeNode:
        tok = self.peek_non_space()
        pipe = PipeNode(tok.pos, tok.line)
        self._declarations(pipe, context)
        while True:
            tok = self.next_non_space()
            if tok.kind is end:
                self._check_pipeline(pipe, context)
                return pipe
            if tok.kind in OPERAND_KINDS or (tok.kind is Kind.KEYWORD and tok.value == "nil"):
                self.backup()
                pipe.cmds.append(self.command())
            else:
                raise self.unexpected(tok, context)

    def _declarations(self, pipe: PipeNode, context: str) -> None:
        while (v := self.peek_non_space()).kind is Kind.VARIABLE:
            start = self.i
            self.next_non_space()
            nxt = self.peek_non_space()
            if nxt.kind in (Kind.ASSIGN, Kind.DECLARE):
                pipe.is_assign = nxt.kind is Kind.ASSIGN
                self.next_non_space()
                pipe.decl.append(VariableNode(v.pos, v.line, [v.value]))
                self.vars.append(v.value)
                return
            if nxt.kind is Kind.CHAR and nxt.value == ",":
                self.next_non_space()
                pipe.decl.append(VariableNode(v.pos, v.line, [v.value]))
                self.vars.append(v.value)
                if context == "range" and len(pipe.decl) < 2:
                    following = self.peek_non_space()
                    if following.kind in (Kind.VARIABLE, Kind.RIGHT_DELIM, Kind.RIGHT_PAREN):
                        continue
                    raise self.error("range can only initialize variables")
                raise self.error(f"too many declarations in {context}")
            self.i = start
            return

    def _check_pipeline(self, pipe: PipeNode, context: str) -> None:
        if not pipe.cmds:
            raise self.error(f"missing value for {context}")
        for i, cmd in enumerate(pipe.cmds[1:], 2):
            if isinstance(cmd.args[0], BoolNode | DotNode | NilNode | NumberNode | StringNode):
                raise self.error(f"non executable command in pipeline stage {i}")

    def command(self) -> CommandNode:
        tok = self.peek_non_space()
        cmd = CommandNode(tok.pos, tok.line)
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                cmd.args.append(operand)
            tok = self.next()
            if tok.kind is Kind.SPACE:
                continue
            if tok.kind in (Kind.RIGHT_DELIM, Kind.RIGHT_PAREN):
                self.backup()
            elif tok.kind is not Kind.PIPE:
                raise self.unexpected(tok, "operand")
            break
        if not cmd.args:
            raise self.error("empty command")
        return cmd

    def operand(self) -> Node | None:
        node = self.term()
        if node is None or self.peek().kind is not Kind.FIELD:
            return node
        fields: list[str] = []
        while self.peek().kind is Kind.FIELD:
            fields.append(self.next().value[1:])
        if isinstance(node, FieldNode):
            return FieldNode(node.pos, node.line, node.idents + fields)
        if isinstance(node, VariableNode):
            return VariableNode(node.pos, node.line, node.idents + fields)
        if isinstance(node, BoolNode | StringNode | NumberNode | NilNode | DotNode):
            raise self.error(f"unexpected . after term {str(node)!r}")
        return ChainNode(node.pos, node.line, node, fields)

    def term(self) -> Node | None:
        tok = self.next_non_space()
        kind = tok.kind
        if kind is Kind.IDENTIFIER:
            if not self.known(tok.value):
                problem = self.error(f'function "{tok.value}" not defined')
                if self.on_unknown is None:
                    raise problem
                self.on_unknown(problem)
            return IdentifierNode(tok.pos, tok.line, tok.value)
        if kind is Kind.DOT:
            return DotNode(tok.pos, tok.line)
        if kind is Kind.KEYWORD and tok.value == "nil":
            return NilNode(tok.pos, tok.line)
        if kind is Kind.VARIABLE:
            if tok.value not in self.vars:
                raise self.error(f'undefined variable "{tok.value}"')
            return VariableNode(tok.pos, tok.line, [tok.value])
        if kind is Kind.FIELD:
            return FieldNode(tok.pos, tok.line, [tok.value[1:]])
        if kind is Kind.BOOL:
            return BoolNode(tok.pos, tok.line, tok.value == "true")
        if kind in (Kind.NUMBER, Kind.CHAR_CONSTANT):
            try:
                return number_node(tok)
            except ValueError as e:
                raise self.error(str(e)) from None
        if kind is Kind.LEFT_PAREN:
            return self.pipeline("parenthesized pipeline", Kind.RIGHT_PAREN)
        if kind in (Kind.STRING, Kind.RAW_STRING):
            return StringNode(tok.pos, tok.line, tok.value, self._unquote(tok))
        self.backup()
        return None


def parse_trees(
    name: str,
    text: str,
    left: str,
    right: str,
    functions: Iterable[str] | Callable[[str], bool],
    on_unknown_function: Callable[[ParseError], None] | None = None,
) -> dict[str, Tree]:
    known = functions if callable(functions) else frozenset(functions).__contains__
    return Parser(name, text, left, right, known, on_unknown_function).parse()
