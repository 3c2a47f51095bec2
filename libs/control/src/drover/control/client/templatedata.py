"""What a task's templates read, from the API's answers the agent keeps (drover.client
.templatesources), in the shapes drover.template's Nomad functions give them: services as
`nomadService` entries, variables with their items. Pure: the agent hands in the answers. And
the `env = true` file format (KEY=VALUE lines, as Nomad's template hook reads it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from drover.template import ServiceEntry, ServiceStub, Variable, VarMeta


class CachedData:
    """drover.template's NomadData over the API's answers: (kind, key) -> the JSON (None for a
    404). What was never read is not there: the render records it as missing."""

    def __init__(self, values: Mapping[tuple[str, str], Any], namespace: str) -> None:
        self.values = values
        self.namespace = namespace

    def has(self, kind: str, key: str) -> bool:
        return (kind, key) in self.values

    def services(self, name: str) -> list[ServiceEntry]:
        return [_entry(r) for r in self.values.get(("service", name)) or []]

    def service_names(self) -> list[ServiceStub]:
        out = []
        for ns in self.values.get(("services", "")) or []:
            for s in ns.get("Services") or []:
                out.append(ServiceStub(Name=s.get("ServiceName", ""), Tags=sorted(s.get("Tags") or [])))
        return sorted(out, key=lambda s: s.Name)

    def _key(self, path: str, namespace: str) -> str:
        return path if namespace == self.namespace else f"{path}@{namespace}"

    def variable(self, path: str, namespace: str) -> Variable | None:
        v = self.values.get(("var", self._key(path, namespace)))
        if not v:
            return None
        return Variable(_meta(v), {str(k): str(x) for k, x in (v.get("Items") or {}).items()})

    def variables(self, prefix: str, namespace: str) -> list[VarMeta]:
        return [_meta(v) for v in self.values.get(("varlist", self._key(prefix, namespace))) or []]


def _entry(r: Mapping[str, Any]) -> ServiceEntry:
    return ServiceEntry(
        ID=r.get("ID", ""),
        Name=r.get("ServiceName", ""),
        Node=r.get("NodeID", ""),
        Address=r.get("Address", ""),
        Port=int(r.get("Port", 0)),
        Datacenter=r.get("Datacenter", ""),
        Tags=list(r.get("Tags") or []),
        JobID=r.get("JobID", ""),
        AllocID=r.get("AllocID", ""),
        Namespace=r.get("Namespace", "default"),
    )


def _meta(v: Mapping[str, Any]) -> VarMeta:
    return VarMeta(
        Namespace=v.get("Namespace", "default"),
        Path=v.get("Path", ""),
        CreateIndex=int(v.get("CreateIndex", 0)),
        ModifyIndex=int(v.get("ModifyIndex", 0)),
        CreateTime=int(v.get("CreateTime", 0)),
        ModifyTime=int(v.get("ModifyTime", 0)),
    )


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines (`export ` allowed, # comments, blank lines, values in single or double
    quotes, double-quoted escapes), as an `env = true` template's output is read."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            try:
                value = json.loads(value)
            except ValueError:
                value = value[1:-1]
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].rstrip()
        out[key] = value
    return out
