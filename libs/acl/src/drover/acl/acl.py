"""The ACL of a token: its policies merged into one object that answers every check
(acl/acl.go NewACL and its Allow* methods).

Merging: a namespace's (node pool's, host volume's) capabilities are the union of what every
policy grants it by the same label, except that `deny` in any of them leaves `deny` alone
whatever the order; agent, node, quota and plugin take the most privilege granted (deny above
write above read above list). A lookup takes the rule whose label is the name itself, else the
matching glob that spells out the most of it (drover.acl.glob): an exact `write` beats a glob's
`deny`, and an exact `deny` a glob's `write`. A management token's ACL allows everything."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from drover.acl import capabilities as caps
from drover.acl.glob import closest, is_glob
from drover.acl.policy import Policy

ALL_NAMESPACES = "*"
CapabilitySet = frozenset[str]
# Glob labels and their sets, in lexical order (ties between equally close globs go to the first).
Globs = tuple[tuple[str, CapabilitySet], ...]


def _lookup(exact: dict[str, CapabilitySet], globs: Globs, name: str) -> CapabilitySet | None:
    found = exact.get(name)
    if found is not None:
        return found
    return closest(globs, name) if globs else None


@dataclass(frozen=True)
class ACL:
    management: bool = False
    namespaces: dict[str, CapabilitySet] = field(default_factory=dict)
    wildcard_namespaces: Globs = ()
    node_pools: dict[str, CapabilitySet] = field(default_factory=dict)
    wildcard_node_pools: Globs = ()
    host_volumes: dict[str, CapabilitySet] = field(default_factory=dict)
    wildcard_host_volumes: Globs = ()
    # By "<namespace>\x00<path>"; a rule with a `*` in either part is a glob over that key.
    variables: dict[str, CapabilitySet] = field(default_factory=dict)
    wildcard_variables: Globs = ()
    agent: str = ""
    node: str = ""
    operator: str = ""
    quota: str = ""
    plugin: str = ""
    operator_capabilities: CapabilitySet = frozenset()

    # --- namespaces ---
    def namespace_capabilities(self, namespace: str) -> CapabilitySet | None:
        """The capability set that applies to `namespace` (None: no rule names it)."""
        return _lookup(self.namespaces, self.wildcard_namespaces, namespace)

    def allow_namespace_operation(self, namespace: str, capability: str) -> bool:
        """Whether `capability` is granted in `namespace`; in `*` (every namespace, as a list
        across namespaces asks), whether some namespace grants it."""
        if self.management:
            return True
        if namespace == ALL_NAMESPACES and self._any_namespace(lambda c: capability in c):
            return True
        found = self.namespace_capabilities(namespace)
        return found is not None and capability in found

    def allow_namespace_any_of(self, namespace: str, capabilities: Iterable[str]) -> bool:
        return any(self.allow_namespace_operation(namespace, c) for c in capabilities)

    def allow_namespace(self, namespace: str) -> bool:
        """Whether anything at all is granted in `namespace` (and it is not denied)."""
        if self.management:
            return True
        if namespace == ALL_NAMESPACES and self._any_namespace(lambda c: bool(c) and caps.DENY not in c):
            return True
        found = self.namespace_capabilities(namespace)
        return found is not None and bool(found) and caps.DENY not in found

    def _any_namespace(self, test: Callable[[CapabilitySet], bool]) -> bool:
        return any(test(c) for c in self.namespaces.values()) or any(
            test(c) for _, c in self.wildcard_namespaces
        )

    # --- variables ---
    def allow_variable_operation(self, namespace: str, path: str, capability: str) -> bool:
        if self.management:
            return True
        found = _lookup(self.variables, self.wildcard_variables, f"{namespace}\x00{path}")
        return found is not None and capability in found

    def allow_variable_search(self, namespace: str) -> bool:
        """Whether any variables path rule applies in `namespace` (`*`: in any)."""
        if self.management:
            return True
        if namespace == ALL_NAMESPACES:
            return bool(self.variables or self.wildcard_variables)
        keys = (*self.variables, *(k for k, _ in self.wildcard_variables))
        return any(k.startswith(namespace) for k in keys)

    # --- node pools and host volumes ---
    def allow_node_pool_operation(self, pool: str, capability: str) -> bool:
        if self.management:
            return True
        found = _lookup(self.node_pools, self.wildcard_node_pools, pool)
        return found is not None and capability in found

    def allow_host_volume_operation(self, volume: str, capability: str) -> bool:
        if self.management:
            return True
        found = _lookup(self.host_volumes, self.wildcard_host_volumes, volume)
        return found is not None and capability in found

    # --- the coarse rules ---
    def allow_agent_read(self) -> bool:
        return self.management or self.agent in (caps.POLICY_READ, caps.POLICY_WRITE)

    def allow_agent_write(self) -> bool:
        return self.management or self.agent == caps.POLICY_WRITE

    def allow_node_read(self) -> bool:
        return self.management or self.node in (caps.POLICY_READ, caps.POLICY_WRITE)

    def allow_node_write(self) -> bool:
        return self.management or self.node == caps.POLICY_WRITE

    def allow_operator_read(self) -> bool:
        return self.management or self.operator in (caps.POLICY_READ, caps.POLICY_WRITE)

    def allow_operator_write(self) -> bool:
        return self.management or self.operator == caps.POLICY_WRITE

    def allow_operator_operation(self, capability: str) -> bool:
        return (
            self.management or self.operator == caps.POLICY_WRITE or capability in self.operator_capabilities
        )

    def allow_quota_read(self) -> bool:
        return self.management or self.quota in (caps.POLICY_READ, caps.POLICY_WRITE)

    def allow_quota_write(self) -> bool:
        return self.management or self.quota == caps.POLICY_WRITE

    def allow_plugin_read(self) -> bool:
        # Nomad's quirk: `write` does not grant reading a plugin.
        return self.management or self.plugin == caps.POLICY_READ

    def allow_plugin_list(self) -> bool:
        return self.management or self.plugin in (caps.POLICY_LIST, caps.POLICY_READ)

    def is_management(self) -> bool:
        return self.management


MANAGEMENT = ACL(management=True)


class _Merge:
    """Capability sets by label, merged as NewACL merges them: a set holding `deny` takes
    nothing more, and `deny` empties the set it joins."""

    def __init__(self) -> None:
        self.exact: dict[str, set[str]] = {}
        self.globs: dict[str, set[str]] = {}

    def add(self, label: str, capabilities: Iterable[str], deny: str) -> None:
        into = (self.globs if is_glob(label) else self.exact).setdefault(label, set())
        if deny in into:
            return
        for cap in capabilities:
            if cap == deny:
                into.clear()
                into.add(deny)
                return
            into.add(cap)

    def frozen(self) -> tuple[dict[str, CapabilitySet], Globs]:
        return _frozen(self.exact, self.globs)


def _frozen(exact: dict[str, set[str]], globs: dict[str, set[str]]) -> tuple[dict[str, CapabilitySet], Globs]:
    return {k: frozenset(v) for k, v in exact.items()}, tuple(
        sorted((k, frozenset(v)) for k, v in globs.items())
    )


def compile_acl(policies: Iterable[Policy], *, management: bool = False) -> ACL:
    """The ACL of a token holding `policies` (a management token's allows everything)."""
    if management:
        return MANAGEMENT
    namespaces, pools, volumes = _Merge(), _Merge(), _Merge()
    variables, wildcard_variables = _Merge(), _Merge()
    coarse = {"agent": "", "node": "", "operator": "", "quota": "", "plugin": ""}
    operator_caps: set[str] = set()
    for policy in policies:
        for ns in policy.namespaces:
            # Path rules are kept as written, even in a namespace denied (as Nomad keeps them).
            for rule in ns.variables or ():
                into = wildcard_variables if is_glob(ns.name) or is_glob(rule.path) else variables
                into.exact.setdefault(f"{ns.name}\x00{rule.path}", set()).update(rule.capabilities)
            namespaces.add(ns.name, ns.capabilities, caps.DENY)
        for pool in policy.node_pools:
            pools.add(pool.name, pool.capabilities, caps.NODE_POOL_DENY)
        for volume in policy.host_volumes:
            volumes.add(volume.name, volume.capabilities, caps.HOST_VOLUME_DENY)
        for kind in ("agent", "node", "quota", "plugin"):
            value: str | None = getattr(policy, kind)
            if value is not None:
                coarse[kind] = caps.max_privilege(coarse[kind], value)
        if policy.operator is not None:
            coarse["operator"] = caps.max_privilege(coarse["operator"], policy.operator.policy)
            if caps.OPERATOR_DENY not in operator_caps:
                for cap in policy.operator.capabilities:
                    if cap == caps.OPERATOR_DENY:
                        operator_caps = {caps.OPERATOR_DENY}
                        break
                    operator_caps.add(cap)
    ns_exact, ns_globs = namespaces.frozen()
    pool_exact, pool_globs = pools.frozen()
    vol_exact, vol_globs = volumes.frozen()
    return ACL(
        namespaces=ns_exact,
        wildcard_namespaces=ns_globs,
        node_pools=pool_exact,
        wildcard_node_pools=pool_globs,
        host_volumes=vol_exact,
        wildcard_host_volumes=vol_globs,
        variables=_frozen(variables.exact, {})[0],
        wildcard_variables=_frozen({}, wildcard_variables.exact)[1],
        agent=coarse["agent"],
        node=coarse["node"],
        operator=coarse["operator"],
        quota=coarse["quota"],
        plugin=coarse["plugin"],
        operator_capabilities=frozenset(operator_caps),
    )
