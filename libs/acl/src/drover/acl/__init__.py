"""Nomad's ACL policy language and the ACL a token's policies make, pure: no I/O, no clock.

    policy = parse(rules)                          # PolicyError: every problem, Nomad's words
    acl = compile_acl([policy, ...])               # or MANAGEMENT, or compile_acl([], management=True)
    acl.allow_namespace_operation("prod", "read-job")
    acl.allow_node_read(), acl.allow_operator_write(), acl.is_management()

`drover.acl.capabilities` names every capability and policy shorthand; `drover.acl.glob`
matches rule labels holding `*` as Nomad does."""

from drover.acl.acl import ACL, ALL_NAMESPACES, MANAGEMENT, compile_acl
from drover.acl.policy import (
    CapabilityRule,
    NamedRule,
    NamespaceRule,
    Policy,
    PolicyError,
    VariablesPath,
    parse,
    rules_json,
)

__all__ = [
    "ACL",
    "ALL_NAMESPACES",
    "MANAGEMENT",
    "CapabilityRule",
    "NamedRule",
    "NamespaceRule",
    "Policy",
    "PolicyError",
    "VariablesPath",
    "compile_acl",
    "parse",
    "rules_json",
]
