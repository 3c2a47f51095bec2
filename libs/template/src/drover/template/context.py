"""What a render reads from outside, handed in by its caller (no I/O here): the task's
environment, a reader of files, the time, and Nomad's services and variables; and what the
render read, as dependencies, so the caller can render again when one changes (as
consul-template watches its dependencies)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol


class Dependency(NamedTuple):
    """What a template read: ("service", "web"), ("services", ""), ("var", "app/config"),
    ("varlist", "app/"), ("file", path), ("consul-key", "x"), ..."""

    kind: str
    key: str


@dataclass
class ServiceEntry:
    """One registration of a Nomad service, as ``nomadService`` gives it."""

    go_type = "*dependency.NomadService"
    ID: str = ""
    Name: str = ""
    Node: str = ""
    Address: str = ""
    Port: int = 0
    Datacenter: str = ""
    Tags: list[str] = field(default_factory=list)
    JobID: str = ""
    AllocID: str = ""
    Namespace: str = "default"

    @property
    def NodeID(self) -> str:
        return self.Node

    go_methods = ("NodeID",)


@dataclass
class ServiceStub:
    """One service name, as ``nomadServices`` lists it, with the union of its tags."""

    go_type = "*dependency.NomadServicesSnippet"
    Name: str = ""
    Tags: list[str] = field(default_factory=list)


@dataclass
class VarMeta:
    """A variable's metadata; it prints as its path."""

    go_type = "*dependency.NomadVarMeta"
    go_stringer = True
    Namespace: str = "default"
    Path: str = ""
    CreateIndex: int = 0
    ModifyIndex: int = 0
    CreateTime: int = 0
    ModifyTime: int = 0

    def __str__(self) -> str:
        return self.Path


@dataclass
class Variable:
    """A Nomad variable as the caller's hook returns it: its metadata and its items."""

    meta: VarMeta
    items: Mapping[str, str]


@dataclass
class VarItem:
    """One item of a variable; it prints as its value (JSON too)."""

    go_type = "dependency.NomadVarItem"
    go_stringer = True
    Key: str
    Value: str
    parent: VarMeta | None = None

    def __str__(self) -> str:
        return self.Value

    def to_json(self) -> str:
        return self.Value

    def Metadata(self) -> VarMeta | None:
        return self.parent

    go_methods = ("Metadata",)


class VarItems(dict[str, VarItem]):
    """``nomadVar``'s value: the items by key (``.db``, ``range $k, $v``), with Go's methods."""

    go_type = "dependency.NomadVarItems"
    go_methods = ("Keys", "Values", "Tuples", "Metadata", "Parent", "ItemsMap")

    def __init__(self, items: Mapping[str, VarItem] | None = None, meta: VarMeta | None = None) -> None:
        super().__init__(items or {})
        self.meta = meta

    def Keys(self) -> list[str]:
        return sorted(self)

    def Values(self) -> list[str]:
        return [self[k].Value for k in sorted(self)]

    def Tuples(self) -> list[Tuple]:
        return [Tuple(k, self[k].Value) for k in sorted(self)]

    def Metadata(self) -> VarMeta | None:
        return self.meta

    def Parent(self) -> Parent | None:
        return Parent(self.meta, self) if self.meta is not None else None

    def ItemsMap(self) -> dict[str, str] | None:
        return {k: v.Value for k, v in self.items()} or None


@dataclass
class Tuple:
    K: str
    V: str


@dataclass
class Parent:
    Metadata: VarMeta
    Items: VarItems


class NomadData(Protocol):
    """Nomad's data a template can read, in the task's namespace; None where there is none."""

    def services(self, name: str) -> list[ServiceEntry]:
        """The registrations of a service (in registration order)."""
        ...

    def service_names(self) -> list[ServiceStub]:
        """Every service's name and tags."""
        ...

    def variable(self, path: str, namespace: str) -> Variable | None:
        """The variable at a path, None if none (or not readable)."""
        ...

    def variables(self, prefix: str, namespace: str) -> list[VarMeta]:
        """The metadata of the variables under a prefix."""
        ...


@dataclass
class Call:
    """One render's inputs and the dependencies it read (``used``) and could not have yet
    (``missing``: consul-template does not write a template until none is)."""

    env: Mapping[str, str] = field(default_factory=dict)
    read_file: Callable[[str], str | None] | None = None
    now: datetime = field(default_factory=lambda: datetime(1970, 1, 1, tzinfo=UTC))
    nomad: NomadData | None = None
    namespace: str = "default"
    used: list[Dependency] = field(default_factory=list)
    missing: list[Dependency] = field(default_factory=list)
    scratch: dict[str, Any] = field(default_factory=dict)

    def use(self, kind: str, key: str) -> Dependency:
        dep = Dependency(kind, key)
        if dep not in self.used:
            self.used.append(dep)
        return dep

    def miss(self, dep: Dependency) -> None:
        if dep not in self.missing:
            self.missing.append(dep)
