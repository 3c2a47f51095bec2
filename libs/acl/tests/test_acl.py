"""The ACL of a token's policies: merging (union, deny wins whatever the order, the most
privilege for the coarse rules), glob labels (exact first, then the closest glob), and each
check, as Nomad's acl package answers them."""

from __future__ import annotations

import pytest

from drover.acl import MANAGEMENT, compile_acl, parse
from drover.acl.glob import difference, glob_match


def acl_of(*rules: str):  # type: ignore[no-untyped-def]
    return compile_acl([parse(r) for r in rules])


@pytest.mark.parametrize(
    ("rules", "namespace", "capability", "allowed"),
    [
        (['namespace "default" { policy = "read" }'], "default", "read-job", True),
        (['namespace "default" { policy = "read" }'], "default", "submit-job", False),
        (['namespace "default" { policy = "read" }'], "other", "read-job", False),
        (['namespace "default" { policy = "write" }'], "default", "alloc-exec", True),
        # `read` grants neither logs nor files (Nomad's source, against its docs).
        (['namespace "default" { policy = "read" }'], "default", "read-logs", False),
        (['namespace "default" { policy = "scale" }'], "default", "scale-job", True),
        (['namespace "default" { policy = "scale" }'], "default", "submit-job", False),
        # A union across policies...
        (['namespace "d" { policy = "read" }', 'namespace "d" { capabilities = ["submit-job"] }'], "d", "submit-job", True),
        # ...unless one denies, first or last.
        (['namespace "d" { policy = "write" }', 'namespace "d" { policy = "deny" }'], "d", "read-job", False),
        (['namespace "d" { policy = "deny" }', 'namespace "d" { policy = "write" }'], "d", "read-job", False),
        (['namespace "d" { capabilities = ["read-job", "deny"] }'], "d", "read-job", False),
        # Globs: any run of characters, the empty one too.
        (['namespace "prod-api-*" { policy = "write" }'], "prod-api-services", "submit-job", True),
        (['namespace "prod-api-*" { policy = "write" }'], "prod-api-", "submit-job", True),
        (['namespace "prod-api" { policy = "write" }'], "prod-api-services", "submit-job", False),
        (['namespace "*-web" { policy = "deny" }\nnamespace "*" { policy = "write" }'], "production-web", "read-job", False),
        (['namespace "*-web" { policy = "deny" }\nnamespace "*" { policy = "write" }'], "production-api", "read-job", True),
        # An exact label beats every glob, stronger or weaker.
        (['namespace "prod-api-services" { policy = "deny" }\nnamespace "prod-api-*" { policy = "write" }'],
         "prod-api-services", "read-job", False),
        (['namespace "prod-api-*" { policy = "deny" }\nnamespace "prod-api-services" { policy = "write" }'],
         "prod-api-services", "read-job", True),
        # The closest glob wins, in either order.
        (['namespace "*-api-services" { policy = "deny" }\nnamespace "prod-api-*" { policy = "write" }'],
         "prod-api-services", "read-job", False),
        (['namespace "prod-api-*" { policy = "write" }\nnamespace "*-api-services" { policy = "deny" }'],
         "prod-api-services", "read-job", False),
        # `*`: some namespace grants it.
        (['namespace "a" { policy = "deny" }\nnamespace "b" { policy = "read" }'], "*", "read-job", True),
        (['namespace "a" { policy = "read" }'], "*", "submit-job", False),
        # Nothing at all: the anonymous token without an anonymous policy.
        ([], "default", "read-job", False),
    ],
)  # fmt: skip
def test_namespace_operations(rules: list[str], namespace: str, capability: str, allowed: bool) -> None:
    assert acl_of(*rules).allow_namespace_operation(namespace, capability) is allowed


@pytest.mark.parametrize(
    ("rules", "namespace", "allowed"),
    [
        ('namespace "prod-api-*" { policy = "deny" }\nnamespace "prod-api-services" { policy = "write" }', "*", True),
        ('namespace "prod-api-*" { policy = "deny" }', "*", False),
        ('namespace "d" { policy = "deny" }', "d", False),
        ('namespace "d" { capabilities = ["list-jobs"] }', "d", True),
        ('namespace "d" { capabilities = ["list-jobs"] }', "e", False),
    ],
)  # fmt: skip
def test_allow_namespace(rules: str, namespace: str, allowed: bool) -> None:
    assert acl_of(rules).allow_namespace(namespace) is allowed


@pytest.mark.parametrize(
    ("pattern", "name", "matches", "distance"),
    [
        ("production-*", "production-api", True, 3),
        ("production-*", "production-admin-api", True, 9),
        ("production-**", "production-admin-api", True, 9),
        ("*", "production-admin-api", True, 20),
        ("*admin*", "production-admin-api", True, 15),
        ("*-api", "prod-api", True, 4),
        ("a*b*c", "abc", True, 0),
        ("a*b*c", "acb", False, 0),
        ("prod", "prod", True, 0),
        ("prod", "production", False, 0),
        ("?", "x", False, 0),
    ],
)
def test_glob_matching_and_its_distance(pattern: str, name: str, matches: bool, distance: int) -> None:
    assert glob_match(pattern, name) is matches
    if matches:
        assert difference(pattern, name) == distance


@pytest.mark.parametrize(
    ("rules", "checks"),
    [
        (["node { policy = \"read\" }"], {"node_read": True, "node_write": False}),
        (["node { policy = \"write\" }"], {"node_read": True, "node_write": True}),
        (["node { policy = \"write\" }", "node { policy = \"deny\" }"], {"node_read": False, "node_write": False}),
        (["node { policy = \"read\" }", "node { policy = \"write\" }"], {"node_write": True}),
        (["node { policy = \"scale\" }"], {"node_read": False}),
        (["agent { policy = \"read\" }"], {"agent_read": True, "agent_write": False}),
        (["agent { policy = \"write\" }"], {"agent_read": True, "agent_write": True}),
        (["quota { policy = \"read\" }"], {"quota_read": True, "quota_write": False}),
        (["operator { policy = \"read\" }"], {"operator_read": True, "operator_write": False}),
        (["operator { policy = \"write\" }", "operator { policy = \"read\" }"], {"operator_write": True}),
        # A plugin's `write` does not grant reading it (Nomad's quirk); `list` lists only.
        (["plugin { policy = \"write\" }"], {"plugin_read": False, "plugin_list": False}),
        (["plugin { policy = \"read\" }"], {"plugin_read": True, "plugin_list": True}),
        (["plugin { policy = \"list\" }"], {"plugin_read": False, "plugin_list": True}),
        ([], {"node_read": False, "agent_read": False, "operator_read": False, "quota_read": False}),
    ],
)  # fmt: skip
def test_coarse_rules_merge_by_most_privilege_deny_first(rules: list[str], checks: dict[str, bool]) -> None:
    acl = acl_of(*rules)
    assert {name: getattr(acl, f"allow_{name}")() for name in checks} == checks


@pytest.mark.parametrize(
    ("rules", "capability", "allowed"),
    [
        ('operator { policy = "read" }', "keyring-read", True),
        ('operator { policy = "read" }', "snapshot-save", False),
        ('operator { capabilities = ["snapshot-save"] }', "snapshot-save", True),
        ('operator { capabilities = ["snapshot-save"] }', "keyring-rotate", False),
        ('operator { policy = "write" }', "keyring-delete", True),
        ('operator { capabilities = ["snapshot-save", "deny"] }', "snapshot-save", False),
    ],
)
def test_operator_operations(rules: str, capability: str, allowed: bool) -> None:
    assert acl_of(rules).allow_operator_operation(capability) is allowed


def test_operator_deny_in_one_policy_wins_over_another() -> None:
    acl = acl_of('operator { capabilities = ["deny"] }', 'operator { capabilities = ["snapshot-save"] }')
    assert not acl.allow_operator_operation("snapshot-save")


VARIABLES = """
namespace "apps" {
  variables {
    path "project/*" { capabilities = ["read"] }
    path "project/secret" { capabilities = ["deny"] }
    path "jobs/x" { capabilities = ["write"] }
  }
}
namespace "*" {
  variables {
    path "shared/*" { capabilities = ["list"] }
  }
}
"""


@pytest.mark.parametrize(
    ("namespace", "path", "capability", "allowed"),
    [
        ("apps", "project/a", "read", True),
        ("apps", "project/a", "list", True),
        ("apps", "project/a", "write", False),
        ("apps", "project/secret", "read", False),
        ("apps", "jobs/x", "write", True),
        ("apps", "jobs/x", "read", False),
        ("other", "shared/x", "list", True),
        ("other", "project/a", "read", False),
    ],
)
def test_variables_path_rules(namespace: str, path: str, capability: str, allowed: bool) -> None:
    assert acl_of(VARIABLES).allow_variable_operation(namespace, path, capability) is allowed


def test_variable_search() -> None:
    acl = acl_of('namespace "apps" { variables { path "x" { capabilities = ["read"] } } }')
    assert acl.allow_variable_search("apps") and acl.allow_variable_search("*")
    assert not acl.allow_variable_search("web")
    assert not acl_of('namespace "apps" { policy = "write" }').allow_variable_search("*")


@pytest.mark.parametrize(
    ("rules", "name", "capability", "allowed"),
    [
        ('host_volume "prod-*" { policy = "read" }', "prod-ca", "mount-readonly", True),
        ('host_volume "prod-*" { policy = "read" }', "prod-ca", "mount-readwrite", False),
        ('host_volume "prod-*" { policy = "write" }\nhost_volume "prod-ca" { policy = "deny" }', "prod-ca",
         "mount-readonly", False),
        ('host_volume "prod-*" { policy = "write" }\nhost_volume "prod-ca" { policy = "deny" }', "prod-db",
         "mount-readwrite", True),
    ],
)  # fmt: skip
def test_host_volumes(rules: str, name: str, capability: str, allowed: bool) -> None:
    assert acl_of(rules).allow_host_volume_operation(name, capability) is allowed


@pytest.mark.parametrize(
    ("rules", "pool", "capability", "allowed"),
    [
        ('node_pool "my-pool" { policy = "read" }', "my-pool", "read", True),
        ('node_pool "my-pool" { policy = "read" }', "my-pool", "write", False),
        ('node_pool "my-*" { policy = "write" }', "my-pool", "delete", True),
        ('node_pool "my-*" { policy = "write" }\nnode_pool "my-pool" { policy = "deny" }', "my-pool", "read", False),
    ],
)  # fmt: skip
def test_node_pools(rules: str, pool: str, capability: str, allowed: bool) -> None:
    assert acl_of(rules).allow_node_pool_operation(pool, capability) is allowed


def test_management_allows_everything_and_a_client_acl_is_not_management() -> None:
    for acl in (MANAGEMENT, compile_acl([parse('node { policy = "deny" }')], management=True)):
        assert acl.is_management()
        assert acl.allow_namespace_operation("any", "alloc-node-exec")
        assert acl.allow_node_write() and acl.allow_agent_write() and acl.allow_operator_write()
        assert acl.allow_variable_operation("any", "any/path", "destroy")
    client = acl_of('namespace "*" { policy = "write" }\nnode { policy = "write" }')
    assert not client.is_management()
