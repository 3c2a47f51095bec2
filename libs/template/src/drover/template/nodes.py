"""The parse tree of a template, as Go's text/template/parse has it; each node prints back as
its source would read (Go's errors quote a node as ``at <.Port>``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Node:
    pos: int
    line: int


@dataclass(eq=False)
class TextNode(Node):
    text: str

    def __str__(self) -> str:
        return repr(self.text)


@dataclass(eq=False)
class DotNode(Node):
    def __str__(self) -> str:
        return "."


@dataclass(eq=False)
class NilNode(Node):
    def __str__(self) -> str:
        return "nil"


@dataclass(eq=False)
class BoolNode(Node):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(eq=False)
class NumberNode(Node):
    """A numeric constant: which of Go's kinds it fits (an untyped constant takes the type of
    the parameter it is passed to)."""

    text: str
    is_int: bool = False
    is_float: bool = False
    int_value: int = 0
    float_value: float = 0.0
    is_char: bool = False

    def __str__(self) -> str:
        return self.text


@dataclass(eq=False)
class StringNode(Node):
    quoted: str
    text: str

    def __str__(self) -> str:
        return self.quoted


@dataclass(eq=False)
class IdentifierNode(Node):
    """A function's name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class VariableNode(Node):
    """``$x`` or ``$x.Field.Sub``: the variable's name, then the fields."""

    idents: list[str]

    def __str__(self) -> str:
        return ".".join(self.idents)


@dataclass(eq=False)
class FieldNode(Node):
    """``.Field.Sub`` on dot."""

    idents: list[str]

    def __str__(self) -> str:
        return "." + ".".join(self.idents)


@dataclass(eq=False)
class ChainNode(Node):
    """Fields on a parenthesised pipeline or a function's result: ``(index . 0).Name``."""

    node: Node
    fields: list[str]

    def __str__(self) -> str:
        inner = f"({self.node})" if isinstance(self.node, PipeNode) else str(self.node)
        return inner + "".join("." + f for f in self.fields)


@dataclass(eq=False)
class CommandNode(Node):
    args: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, PipeNode) else str(a) for a in self.args)


@dataclass(eq=False)
class PipeNode(Node):
    decl: list[VariableNode] = field(default_factory=list)
    is_assign: bool = False
    cmds: list[CommandNode] = field(default_factory=list)

    def __str__(self) -> str:
        out = ""
        if self.decl:
            out = ", ".join(str(v) for v in self.decl) + (" = " if self.is_assign else " := ")
        return out + " | ".join(str(c) for c in self.cmds)


@dataclass(eq=False)
class ListNode(Node):
    nodes: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return "".join(str(n) for n in self.nodes)


@dataclass(eq=False)
class ActionNode(Node):
    pipe: PipeNode

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


@dataclass(eq=False)
class BranchNode(Node):
    """``if``, ``range`` and ``with``: a pipeline, its list, and the ``else`` list if any."""

    keyword: str
    pipe: PipeNode
    body: ListNode
    else_body: ListNode | None

    def __str__(self) -> str:
        out = "{{" + self.keyword + " " + str(self.pipe) + "}}" + str(self.body)
        if self.else_body is not None:
            out += "{{else}}" + str(self.else_body)
        return out + "{{end}}"


@dataclass(eq=False)
class TemplateNode(Node):
    """``{{template "name" pipeline}}``."""

    name: str
    pipe: PipeNode | None

    def __str__(self) -> str:
        return '{{template "' + self.name + '"' + (" " + str(self.pipe) if self.pipe else "") + "}}"


@dataclass(eq=False)
class BreakNode(Node):
    def __str__(self) -> str:
        return "{{break}}"


@dataclass(eq=False)
class ContinueNode(Node):
    def __str__(self) -> str:
        return "{{continue}}"


@dataclass(eq=False)
class EndNode(Node):
    def __str__(self) -> str:
        return "{{end}}"


@dataclass(eq=False)
class ElseNode(Node):
    def __str__(self) -> str:
        return "{{else}}"
