"""Nomad's ACL policy language: a policy's rules parsed, checked and expanded (acl/policy.go).

    namespace "default" { policy = "read"  capabilities = ["submit-job"] }
    namespace "prod-*"  { policy = "deny" }
    namespace "dev"     { variables { path "project/*" { capabilities = ["read"] } } }
    node { policy = "read" }   agent { policy = "write" }   operator { policy = "read" }
    quota { policy = "read" }  plugin { policy = "list" }
    host_volume "ca-*" { capabilities = ["mount-readonly"] }   node_pool "dev-*" { policy = "write" }

`parse` lists every problem at once (`PolicyError.problems`), in Nomad's words with the line
each is on; `strict` (how Nomad parses a policy being written) also refuses keys it does not
know and singular blocks written twice, which lenient parsing (how a stored policy is read
to be applied) passes over. Each rule's capabilities come expanded: its own, what its
`policy` shorthand grants, and what they imply. Empty rules are a policy granting nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from drover.acl import capabilities as caps
from drover.acl.document import DocumentError, Section, Value, read_document

_NAMESPACE_NAME = re.compile(r"^[a-zA-Z0-9\-*]{1,128}$")
_NODE_POOL_NAME = re.compile(r"^[a-zA-Z0-9\-_*]{1,128}$")
_HOST_VOLUME_NAME = re.compile(r"^[a-zA-Z0-9\-*]{1,128}$")
_COARSE = ("agent", "node", "quota", "plugin")
_KNOWN = ("namespace", "node_pool", "host_volume", "agent", "node", "operator", "sentinel", "quota", "plugin")


class PolicyError(ValueError):
    """The rules do not make a policy; `problems` lists every reason, one per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class VariablesPath:
    """A `path` rule of a namespace's `variables` block (the path may hold `*`)."""

    path: str
    capabilities: tuple[str, ...]


@dataclass(frozen=True)
class NamespaceRule:
    name: str
    policy: str = ""
    capabilities: tuple[str, ...] = ()
    # None without a `variables` block.
    variables: tuple[VariablesPath, ...] | None = None


@dataclass(frozen=True)
class NamedRule:
    """A `node_pool` or `host_volume` rule (its name may hold `*`)."""

    name: str
    policy: str = ""
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class CapabilityRule:
    """An `operator` or `sentinel` rule: a shorthand and capabilities."""

    policy: str = ""
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    """The rules of one policy. The coarse rules (agent, node, quota, plugin) are their
    `policy` value, None where the policy has no such block."""

    namespaces: tuple[NamespaceRule, ...] = ()
    node_pools: tuple[NamedRule, ...] = ()
    host_volumes: tuple[NamedRule, ...] = ()
    agent: str | None = None
    node: str | None = None
    quota: str | None = None
    plugin: str | None = None
    operator: CapabilityRule | None = None
    sentinel: CapabilityRule | None = None
    raw: str = ""


@dataclass
class _Parse:
    strict: bool
    problems: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def problem(self, message: str, line: int = 0) -> None:
        self.problems.append(f"{message} (line {line})" if line else message)

    @staticmethod
    def line(section: Section, name: str) -> int:
        """The line argument `name` is on (the block's when absent)."""
        value = section.arguments.get(name)
        return value.line if value is not None and value.line else section.line

    def string(self, section: Section, name: str, where: str) -> str:
        """Argument `name` of `section` as a string ("" when absent or not one)."""
        value = section.arguments.get(name)
        if value is None:
            return ""
        if not isinstance(value.value, str):
            self.problem(f"{where}: {name} must be a string, not {_kind(value)}", value.line)
            return ""
        return value.value

    def strings(self, section: Section, name: str, where: str) -> tuple[str, ...]:
        value = section.arguments.get(name)
        if value is None:
            return ()
        if not isinstance(value.value, list):
            self.problem(f"{where}: {name} must be a list of strings, not {_kind(value)}", value.line)
            return ()
        return tuple(value.value)

    def keys(
        self, section: Section, arguments: tuple[str, ...], sections: tuple[str, ...], where: str
    ) -> None:
        """Note the keys of `section` a rule of its kind does not have."""
        prefix = f"{where}." if where else ""
        self.unknown.extend(prefix + k for k in section.arguments if k not in arguments)
        self.unknown.extend(prefix + k for k in section.repeated)
        self.unknown.extend(prefix + s.type for s in section.sections if s.type not in sections)


def _kind(value: Value) -> str:
    if value.kind:
        return value.kind
    return "a string" if isinstance(value.value, str) else "a list"


def _q(text: str) -> str:
    """A name quoted as Go's %q quotes it."""
    return json.dumps(text)


def _unique(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def parse(rules: str, *, strict: bool = True) -> Policy:
    """The policy `rules` (HCL or JSON) describe; PolicyError listing every problem."""
    if rules == "":
        return Policy()
    try:
        doc = read_document(rules)
    except DocumentError as e:
        raise PolicyError([f"Failed to parse ACL Policy: {p}" for p in e.problems]) from None
    p = _Parse(strict)
    p.keys(doc, (), _KNOWN, "")
    namespaces = tuple(_namespace(p, s) for s in doc.sections if s.type == "namespace")
    node_pools = tuple(_node_pool(p, s) for s in doc.sections if s.type == "node_pool")
    host_volumes = tuple(_host_volume(p, s) for s in doc.sections if s.type == "host_volume")
    coarse = {kind: _coarse(p, doc, kind) for kind in _COARSE}
    operator = _capability_rule(
        p, doc, "operator", caps.OPERATOR_CAPABILITIES, caps.OPERATOR_POLICY_CAPABILITIES
    )
    sentinel = _capability_rule(p, doc, "sentinel", _SENTINEL_CAPABILITIES, _SENTINEL_POLICY_CAPABILITIES)
    known = [s for s in doc.sections if s.type in _KNOWN]
    if not known:
        p.problems.insert(0, "Invalid policy: it holds no namespace, node_pool, host_volume, agent, node, "
                             "operator, sentinel, quota or plugin rule")  # fmt: skip
    if strict and p.unknown:
        p.problems.append(f"Invalid or duplicate policy keys: {', '.join(sorted(p.unknown))}")
    if p.problems:
        raise PolicyError(p.problems)
    return Policy(
        namespaces=namespaces,
        node_pools=node_pools,
        host_volumes=host_volumes,
        agent=coarse["agent"],
        node=coarse["node"],
        quota=coarse["quota"],
        plugin=coarse["plugin"],
        operator=operator,
        sentinel=sentinel,
        raw=rules,
    )


def _label(p: _Parse, s: Section) -> str:
    """A labelled block's one label ("" without one, or with more than one: Nomad's decoder
    then takes no name)."""
    return s.labels[0] if len(s.labels) == 1 else ""


def _namespace(p: _Parse, s: Section) -> NamespaceRule:
    name = _label(p, s)
    where = f"namespace {_q(name)}"
    if not _NAMESPACE_NAME.match(name):
        p.problem(f"Invalid namespace name {_q(name)}", s.line)
    p.keys(s, ("policy", "capabilities"), ("variables",), f"namespace.{name}")
    policy = p.string(s, "policy", where)
    if policy and policy not in caps.POLICIES:
        p.problem(f"Invalid namespace policy {_q(policy)} in {where}", p.line(s, "policy"))
    own = p.strings(s, "capabilities", where)
    for cap in own:
        if cap not in caps.NAMESPACE_CAPABILITIES:
            p.problem(f"Invalid namespace capability '{cap}' in {where}", p.line(s, "capabilities"))
    granted = (*own, *caps.NAMESPACE_POLICY_CAPABILITIES.get(policy, ()))
    implied = tuple(extra for cap in granted for extra in caps.IMPLIED_NAMESPACE_CAPABILITIES.get(cap, ()))
    blocks = [v for v in s.sections if v.type == "variables"]
    if len(blocks) > 1:
        p.unknown.append(f"namespace.{name}.variables")
    variables = _variables(p, blocks[0], name) if blocks else None
    return NamespaceRule(name, policy, _unique((*granted, *implied)), variables)


def _variables(p: _Parse, s: Section, namespace: str) -> tuple[VariablesPath, ...]:
    p.keys(s, (), ("path",), f"namespace.{namespace}.variables")
    paths = [v for v in s.sections if v.type == "path"]
    if not paths:
        p.problem(f"Invalid variable policy: no variable paths in namespace {namespace}", s.line)
    out = []
    for v in paths:
        path = _label(p, v)
        p.keys(v, ("capabilities",), (), f"namespace.{namespace}.variables.path.{path}")
        if not path:
            p.problem(f"Invalid missing variable path in namespace {namespace}", v.line)
        elif path.startswith("/"):
            p.problem(f"Invalid variable path {_q(path)} in namespace {namespace}: cannot start with a leading '/'",
                      v.line)  # fmt: skip
        own = p.strings(v, "capabilities", f"variables path {_q(path)}")
        for cap in own:
            if cap not in caps.VARIABLES_CAPABILITIES:
                p.problem(
                    f"Invalid variable capability '{cap}' in namespace {namespace}", p.line(v, "capabilities")
                )
        out.append(VariablesPath(path, _unique(caps.expand_variables(own))))
    return tuple(out)


def _node_pool(p: _Parse, s: Section) -> NamedRule:
    name = _label(p, s)
    if not _NODE_POOL_NAME.match(name):
        p.problem(f"Invalid node pool name '{name}'", s.line)
    p.keys(s, ("policy", "capabilities"), (), f"node_pool.{name}")
    where = f"node pool '{name}'"
    policy = p.string(s, "policy", where)
    if policy and policy not in caps.POLICIES:
        p.problem(f"Invalid node pool policy '{policy}' for '{name}'", p.line(s, "policy"))
    own = p.strings(s, "capabilities", where)
    for cap in own:
        if cap not in caps.NODE_POOL_CAPABILITIES:
            p.problem(f"Invalid node pool capability '{cap}' for '{name}'", p.line(s, "capabilities"))
    return NamedRule(name, policy, _unique((*own, *caps.NODE_POOL_POLICY_CAPABILITIES.get(policy, ()))))


def _host_volume(p: _Parse, s: Section) -> NamedRule:
    name = _label(p, s)
    where = f"host volume {_q(name)}"
    if not _HOST_VOLUME_NAME.match(name):
        p.problem(f"Invalid host volume name {_q(name)}", s.line)
    p.keys(s, ("policy", "capabilities"), (), f"host_volume.{name}")
    policy = p.string(s, "policy", where)
    if policy and policy not in caps.POLICIES:
        p.problem(f"Invalid host volume policy {_q(policy)} for {where}", p.line(s, "policy"))
    own = p.strings(s, "capabilities", where)
    for cap in own:
        if cap not in caps.HOST_VOLUME_CAPABILITIES:
            p.problem(f"Invalid host volume capability '{cap}' for {where}", p.line(s, "capabilities"))
    return NamedRule(name, policy, _unique((*own, *caps.HOST_VOLUME_POLICY_CAPABILITIES.get(policy, ()))))


def _singular(p: _Parse, doc: Section, kind: str) -> list[Section]:
    """The blocks of a kind a policy has at most one of (a second is a duplicate key)."""
    found = [s for s in doc.sections if s.type == kind]
    p.unknown.extend(kind for _ in found[1:])
    for s in found:
        if s.labels:
            p.problem(f"Invalid {kind} policy: {kind} takes no label", s.line)
    return found


def _coarse(p: _Parse, doc: Section, kind: str) -> str | None:
    """An agent, node, quota or plugin rule's policy (duplicates, read leniently, merged as
    policies are: the most privilege, deny above all)."""
    found = _singular(p, doc, kind)
    valid = caps.PLUGIN_POLICIES if kind == "plugin" else caps.POLICIES
    merged: str | None = None
    for s in found:
        p.keys(s, ("policy",), (), kind)
        policy = p.string(s, "policy", kind)
        if policy not in valid:
            p.problem(f"Invalid {kind} policy {_q(policy)}", p.line(s, "policy"))
        merged = policy if merged is None else caps.max_privilege(merged, policy)
    return merged


def _capability_rule(
    p: _Parse, doc: Section, kind: str, valid: frozenset[str], shorthand: dict[str, tuple[str, ...]]
) -> CapabilityRule | None:
    found = _singular(p, doc, kind)
    if not found:
        return None
    policy = ""
    granted: list[str] = []
    for s in found:
        p.keys(s, ("policy", "capabilities"), (), kind)
        this = p.string(s, "policy", kind)
        if this and this not in caps.POLICIES:
            p.problem(f"Invalid {kind} policy {_q(this)}", p.line(s, "policy"))
        own = p.strings(s, "capabilities", kind)
        for cap in own:
            if cap not in valid:
                p.problem(f"Invalid {kind} capability '{cap}'", p.line(s, "capabilities"))
        policy = caps.max_privilege(policy, this) if policy else this
        granted += [*own, *shorthand.get(this, ())]
    return CapabilityRule(policy, _unique(tuple(granted)))


# Sentinel (Nomad Enterprise's): parsed and checked so an Enterprise policy is taken whole; it
# grants nothing here.
_SENTINEL_CAPABILITIES = frozenset({"deny", "sentinel-read", "sentinel-submit", "sentinel-delete"})
_SENTINEL_POLICY_CAPABILITIES: dict[str, tuple[str, ...]] = {
    caps.POLICY_DENY: ("deny",),
    caps.POLICY_READ: ("sentinel-read",),
    caps.POLICY_WRITE: ("sentinel-read", "sentinel-submit", "sentinel-delete"),
}


def rules_json(policy: Policy) -> dict[str, Any]:
    """The parsed policy as Nomad answers it in an ACLPolicy's `RulesJSON` (its acl.Policy,
    capabilities expanded; a rule the policy has not is null)."""

    def named(rule: NamedRule) -> dict[str, Any]:
        return {"Name": rule.name, "Policy": rule.policy, "Capabilities": list(rule.capabilities)}

    def namespace(rule: NamespaceRule) -> dict[str, Any]:
        paths = None
        if rule.variables is not None:
            paths = {
                "Paths": [{"PathSpec": p.path, "Capabilities": list(p.capabilities)} for p in rule.variables]
            }
        return {
            "Name": rule.name,
            "Policy": rule.policy,
            "Capabilities": list(rule.capabilities),
            "Variables": paths,
        }

    def coarse(value: str | None) -> dict[str, str] | None:
        return None if value is None else {"Policy": value}

    def capability(rule: CapabilityRule | None) -> dict[str, Any] | None:
        return None if rule is None else {"Policy": rule.policy, "Capabilities": list(rule.capabilities)}

    return {
        "Namespaces": [namespace(r) for r in policy.namespaces] or None,
        "NodePools": [named(r) for r in policy.node_pools] or None,
        "HostVolumes": [named(r) for r in policy.host_volumes] or None,
        "Agent": coarse(policy.agent),
        "Node": coarse(policy.node),
        "Operator": capability(policy.operator),
        "Sentinel": capability(policy.sentinel),
        "Quota": coarse(policy.quota),
        "Plugin": coarse(policy.plugin),
    }
