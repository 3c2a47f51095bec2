"""Nomad's data functions (``nomadService``, ``nomadServices``, ``nomadVar``, ``nomadVarList``,
``nomadVarListSafe``, ``nomadVarExists``) through the caller's NomadData, each recording what it
read; and consul-template's Consul and Vault functions, which Drover has no server for: they
parse, and a render that calls one records a dependency it cannot have (so, as Nomad without
Consul, the template is never written)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from drover.template.context import Call, Dependency, ServiceEntry, ServiceStub, VarItem, VarItems, VarMeta
from drover.template.registry import ANY, STRING, Function
from drover.template.values import go_type

_SERVICE = re.compile(r"^(?:(?P<tag>[\w=:.\-]+)\.)?(?P<name>[\w\-]+)(?:@(?P<region>[\w.\-]+))?$")
_VAR = re.compile(r"^/?(?P<path>[^@]+)(?:@(?P<namespace>[\w\-]+))?(?:\.(?P<region>[\w\-]+))?$")
_VAR_LIST = re.compile(r"^/?(?P<prefix>[^@]*)(?:@(?P<namespace>[\w\-]+|\*))?(?:\.(?P<region>[\w\-]+))?$")


def hash_with(service: ServiceEntry, key: str) -> str:
    """A registration's rendezvous priority for a key (Nomad's ServiceRegistration.HashWith)."""
    h = hashlib.sha256()
    h.update(service.Port.to_bytes(8, "big", signed=False))
    for part in (
        service.AllocID,
        service.ID,
        service.Namespace,
        service.Address,
        service.Name,
        *service.Tags,
    ):
        h.update(part.encode())
    h.update(key.encode())
    return h.hexdigest()


def choose(services: list[ServiceEntry], count: int, key: str) -> list[ServiceEntry]:
    """The ``count`` registrations a key picks by rendezvous hashing (Nomad's ``?choose=``)."""
    ranked = sorted(services, key=lambda s: hash_with(s, key))
    return ranked[: max(count, 0)]


def _nomad_service(call: Call, *args: Any) -> list[ServiceEntry]:
    if len(args) == 1:
        if not isinstance(args[0], str):
            raise ValueError("expected string for <service> argument")
        query, count, key = args[0], None, ""
    elif len(args) == 3:
        if not isinstance(args[0], int) or isinstance(args[0], bool):
            raise ValueError("expected integer for <count> argument")
        if not isinstance(args[1], str):
            raise ValueError("expected string for <key> argument")
        if not isinstance(args[2], str):
            raise ValueError("expected string for <service> argument")
        count, key, query = args
        if not key:
            raise ValueError("failed to choose services: malformed choose parameter")
    else:
        raise ValueError("expected arguments <service> or <count> <key> <service>")
    m = _SERVICE.match(query)
    if m is None:
        raise ValueError(f'nomad.service: invalid format: "{query}"')
    name, tag = m["name"], m["tag"]
    call.use("service", name)
    if call.nomad is None:
        call.miss(Dependency("service", name))
        return []
    services = list(call.nomad.services(name))
    if count is not None:
        services = choose(services, count, key)
    if tag:
        services = [s for s in services if tag in s.Tags]
    out = [ServiceEntry(**{**vars(s), "Tags": sorted(s.Tags)}) for s in services]
    return sorted(out, key=lambda s: s.Name)


def _nomad_services(call: Call, *args: str) -> list[ServiceStub]:
    query = "".join(args)
    if query and not re.fullmatch(r"@[\w.\-]+", query):
        raise ValueError(f'nomad.services: invalid format: "{query}"')
    call.use("services", "")
    if call.nomad is None:
        call.miss(Dependency("services", ""))
        return []
    stubs = [ServiceStub(s.Name, sorted(set(s.Tags))) for s in call.nomad.service_names()]
    return sorted(stubs, key=lambda s: s.Name)


def _var_query(call: Call, s: str) -> tuple[str, str]:
    s = s.strip().strip("/")
    m = _VAR.match(s)
    if m is None:
        raise ValueError(f'nomad.var.get: invalid format: "{s}"')
    return m["path"], m["namespace"] or call.namespace


def _lookup(call: Call, s: str) -> tuple[Dependency, VarItems | None]:
    path, namespace = _var_query(call, s)
    dep = call.use("var", path if namespace == call.namespace else f"{path}@{namespace}")
    if call.nomad is None:
        return dep, None
    variable = call.nomad.variable(path, namespace)
    if variable is None:
        return dep, None
    meta = variable.meta
    return dep, VarItems({k: VarItem(k, v, meta) for k, v in variable.items.items()}, meta)


def _nomad_var(call: Call, s: str) -> VarItems:
    if not s:
        return VarItems()
    dep, items = _lookup(call, s)
    if items is None:
        call.miss(dep)  # consul-template blocks until the variable exists
        return VarItems()
    return items


def _nomad_var_exists(call: Call, s: str) -> bool:
    if not s:
        return False
    dep, items = _lookup(call, s)
    if call.nomad is None:
        call.miss(dep)
    return items is not None


def _nomad_var_list(safe: bool) -> Function:
    def run(call: Call, *args: str) -> list[VarMeta]:
        if len(args) > 1:
            raise ValueError(
                'nomadVarList takes either a single "prefix" parameter or none for all available variables; '
                f"got: [{' '.join(args)}]"
            )
        s = args[0].strip() if args else ""
        m = _VAR_LIST.match(s)
        if m is None:
            raise ValueError(f'nomad.var.list: invalid format: "{s}"')
        prefix, namespace = m["prefix"], m["namespace"] or call.namespace
        dep = call.use("varlist", prefix if namespace == call.namespace else f"{prefix}@{namespace}")
        if call.nomad is None:
            call.miss(dep)
            return []
        metas = list(call.nomad.variables(prefix, namespace))
        if safe and not metas:
            call.miss(dep)
        return metas

    return Function(run, (), STRING, needs_call=True)


NOMAD: dict[str, Function] = {
    "nomadService": Function(_nomad_service, (), ANY, needs_call=True),
    "nomadServices": Function(_nomad_services, (), STRING, needs_call=True),
    "nomadVar": Function(_nomad_var, (STRING,), needs_call=True),
    "nomadVarExists": Function(_nomad_var_exists, (STRING,), needs_call=True),
    "nomadVarList": _nomad_var_list(False),
    "nomadVarListSafe": _nomad_var_list(True),
}


def _unavailable(kind: str, empty: Any) -> Function:
    def run(call: Call, *args: Any) -> Any:
        call.miss(call.use(kind, " ".join(str(a) for a in args)))
        return empty() if callable(empty) else empty

    return Function(run, (), ANY, needs_call=True)


# consul-template's Consul and Vault data functions, and what each gives before its data comes.
UNAVAILABLE: dict[str, Function] = {
    "key": _unavailable("consul-key", ""),
    "keyExists": _unavailable("consul-key", False),
    "keyOrDefault": _unavailable("consul-key", ""),
    "ls": _unavailable("consul-keys", list),
    "safeLs": _unavailable("consul-keys", list),
    "tree": _unavailable("consul-keys", list),
    "safeTree": _unavailable("consul-keys", list),
    "service": _unavailable("consul-service", list),
    "services": _unavailable("consul-services", list),
    "connect": _unavailable("consul-connect", list),
    "node": _unavailable("consul-node", None),
    "nodes": _unavailable("consul-nodes", list),
    "datacenters": _unavailable("consul-datacenters", list),
    "partitions": _unavailable("consul-partitions", list),
    "peerings": _unavailable("consul-peerings", list),
    "exportedServices": _unavailable("consul-exported-services", list),
    "importedServices": _unavailable("consul-imported-services", list),
    "caRoots": _unavailable("consul-ca-roots", list),
    "caLeaf": _unavailable("consul-ca-leaf", None),
    "secret": _unavailable("vault-secret", None),
    "secrets": _unavailable("vault-secrets", list),
    "pkiCert": _unavailable("vault-pki", None),
}

__all__ = ["NOMAD", "UNAVAILABLE", "choose", "go_type", "hash_with"]
