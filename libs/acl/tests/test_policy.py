"""The policy language: what each rule grants once parsed (shorthands expanded, implied
capabilities added), in HCL and in JSON alike, and every problem a bad policy has, in Nomad's
words with the line it is on."""

from __future__ import annotations

import pytest

from drover.acl import NamedRule, NamespaceRule, PolicyError, VariablesPath, parse, rules_json
from drover.acl import capabilities as caps

READ = caps.NAMESPACE_POLICY_CAPABILITIES["read"]
WRITE = caps.NAMESPACE_POLICY_CAPABILITIES["write"]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ('namespace "default" { policy = "read" }', NamespaceRule("default", "read", READ)),
        ('namespace "default" { policy = "write" }', NamespaceRule("default", "write", WRITE)),
        (
            'namespace "autoscaler" { policy = "scale" }',
            NamespaceRule(
                "autoscaler",
                "scale",
                (
                    "list-scaling-policies",
                    "read-scaling-policy",
                    "read-job-scaling",
                    "scale-job",
                    "read-job",
                    "submit-recommendation",
                ),
            ),
        ),
        ('namespace "secret" { policy = "deny" }', NamespaceRule("secret", "deny", ("deny",))),
        # The capabilities written, then the shorthand's (a union: nothing twice).
        (
            'namespace "default" {\n  policy = "read"\n  capabilities = ["submit-job", "read-job"]\n}',
            NamespaceRule(
                "default", "read", ("submit-job", "read-job", *(c for c in READ if c != "read-job"))
            ),
        ),
        # Nomad 1.11's fine-grained capabilities are not part of `write`...
        ('namespace "d" { capabilities = ["purge-job"] }', NamespaceRule("d", "", ("purge-job",))),
        # ...and the host volume capabilities bring what they imply.
        (
            'namespace "d" { capabilities = ["host-volume-write"] }',
            NamespaceRule(
                "d",
                "",
                (
                    "host-volume-write",
                    "host-volume-register",
                    "host-volume-create",
                    "host-volume-delete",
                    "host-volume-read",
                ),
            ),
        ),
        (
            'namespace "d" { capabilities = ["host-volume-register"] }',
            NamespaceRule("d", "", ("host-volume-register", "host-volume-create", "host-volume-read")),
        ),
        ('namespace "prod-*" { policy = "deny" }', NamespaceRule("prod-*", "deny", ("deny",))),
        # Variables path rules: read brings list; deny alone stays.
        (
            'namespace "apps" {\n variables {\n  path "project/*" { capabilities = ["read"] }\n'
            '  path "jobs/x" { capabilities = ["write"] }\n  path "x" { capabilities = ["read", "deny"] }\n }\n}',
            NamespaceRule(
                "apps",
                "",
                (),
                (
                    VariablesPath("project/*", ("read", "list")),
                    VariablesPath("jobs/x", ("write",)),
                    VariablesPath("x", ("deny",)),
                ),
            ),
        ),
        # Enterprise's namespace capabilities parse (and grant nothing more here).
        (
            'namespace "d" { capabilities = ["sentinel-override"] }',
            NamespaceRule("d", "", ("sentinel-override",)),
        ),
    ],
)
def test_a_namespace_rule_grants_its_capabilities_expanded(rules: str, expected: NamespaceRule) -> None:
    (rule,) = parse(rules).namespaces
    assert rule == expected


def test_the_other_rules() -> None:
    policy = parse(
        """
        node     { policy = "read" }
        agent    { policy = "write" }
        quota    { policy = "deny" }
        plugin   { policy = "list" }
        operator {
          policy       = "read"
          capabilities = ["snapshot-save"]
        }
        host_volume "prod-ca-*" { capabilities = ["mount-readonly"] }
        host_volume "scratch" { policy = "write" }
        node_pool "dev-*" { policy = "write" }
        node_pool "gpu" { capabilities = ["read"] }
        """
    )
    assert (policy.node, policy.agent, policy.quota, policy.plugin) == ("read", "write", "deny", "list")
    assert policy.operator is not None
    assert policy.operator.capabilities == ("snapshot-save", "license-read", "keyring-read")
    assert policy.host_volumes == (
        NamedRule("prod-ca-*", "", ("mount-readonly",)),
        NamedRule("scratch", "write", ("mount-readonly", "mount-readwrite")),
    )
    assert policy.node_pools == (
        NamedRule("dev-*", "write", ("delete", "read", "write")),
        NamedRule("gpu", "", ("read",)),
    )
    assert policy.namespaces == ()


def test_json_reads_as_hcl_does() -> None:
    hcl = parse(
        """
        namespace "default" { policy = "read" }
        namespace "secret" { capabilities = ["deny", "read-logs"] }
        namespace "apps" {
          variables {
            path "project/x" { capabilities = ["read"] }
          }
        }
        host_volume "prod-*" { policy = "write" }
        node_pool "prod" { capabilities = ["read"] }
        node { policy = "read" }
        """
    )
    # Blocks as lists of objects or as one object, as HCL's JSON form writes them.
    json = parse(
        '{"namespace": [{"default": {"policy": "read"}}, {"secret": {"capabilities": ["deny", "read-logs"]}},'
        ' {"apps": {"variables": [{"path": [{"project/x": {"capabilities": ["read"]}}]}]}}],'
        ' "host_volume": {"prod-*": {"policy": "write"}}, "node_pool": [{"prod": {"capabilities": ["read"]}}],'
        ' "node": {"policy": "read"}}'
    )
    assert (json.namespaces, json.host_volumes, json.node_pools, json.node) == (
        hcl.namespaces, hcl.host_volumes, hcl.node_pools, hcl.node
    )  # fmt: skip


def test_empty_rules_are_a_policy_granting_nothing() -> None:
    policy = parse("")
    assert policy.namespaces == () and policy.node is None and policy.operator is None


@pytest.mark.parametrize(
    ("rules", "problems"),
    [
        (
            'namespace "default" {\n  policy = "foo"\n}',
            ['Invalid namespace policy "foo" in namespace "default" (line 2)'],
        ),
        ('namespace {\n  policy = "read"\n}', ['Invalid namespace name "" (line 1)']),
        ('{"namespace": [{"": {"policy": "read"}}]}', ['Invalid namespace name ""']),
        ('namespace "has a space" { policy = "read" }', ['Invalid namespace name "has a space" (line 1)']),
        ('namespace "a_b" { policy = "read" }', ['Invalid namespace name "a_b" (line 1)']),
        (
            'namespace "default" {\n  capabilities = ["deny", "foo"]\n}',
            ["Invalid namespace capability 'foo' in namespace \"default\" (line 2)"],
        ),
        (
            'namespace "dev" {\n  variables "*" {\n    capabilities = ["read"]\n  }\n}',
            [
                "Invalid variable policy: no variable paths in namespace dev (line 2)",
                "Invalid or duplicate policy keys: namespace.dev.variables.capabilities",
            ],
        ),
        (
            'namespace "dev" {\n variables {\n  path "/nomad/job" { capabilities = ["read"] }\n }\n}',
            [
                "Invalid variable path \"/nomad/job\" in namespace dev: cannot start with a leading '/' (line 3)"
            ],
        ),
        (
            'namespace "dev" {\n variables {\n  path {}\n  path "ok" { capabilities = ["read"] }\n }\n}',
            ["Invalid missing variable path in namespace dev (line 3)"],
        ),
        (
            'namespace "dev" {\n variables {\n  path "a" { capabilities = ["read", "exec"] }\n }\n}',
            ["Invalid variable capability 'exec' in namespace dev (line 3)"],
        ),
        ('agent {\n  policy = "foo"\n}', ['Invalid agent policy "foo" (line 2)']),
        ('node { policy = "list" }', ['Invalid node policy "list" (line 1)']),
        ("node {}", ['Invalid node policy "" (line 1)']),
        ('operator { policy = "foo" }', ['Invalid operator policy "foo" (line 1)']),
        (
            'operator { capabilities = ["snapshot-restore"] }',
            ["Invalid operator capability 'snapshot-restore' (line 1)"],
        ),
        ('quota { policy = "foo" }', ['Invalid quota policy "foo" (line 1)']),
        ('plugin { policy = "scale" }', ['Invalid plugin policy "scale" (line 1)']),
        ('node_pool "has space" { policy = "read" }', ["Invalid node pool name 'has space' (line 1)"]),
        (
            'node_pool "p" {\n  policy = "list"\n  capabilities = ["read", "invalid"]\n}',
            [
                "Invalid node pool policy 'list' for 'p' (line 2)",
                "Invalid node pool capability 'invalid' for 'p' (line 3)",
            ],
        ),
        ('host_volume "a b" { policy = "read" }', ['Invalid host volume name "a b" (line 1)']),
        (
            'host_volume "v" { capabilities = ["mount"] }',
            ["Invalid host volume capability 'mount' for host volume \"v\" (line 1)"],
        ),
        ('sentinel { policy = "invalid" }', ['Invalid sentinel policy "invalid" (line 1)']),
        (
            '{"Name": "my-policy", "Description": "a great one", "Rules": "anything"}',
            [
                "Invalid policy: it holds no namespace, node_pool, host_volume, agent, node, operator, sentinel, quota "
                "or plugin rule",
                "Invalid or duplicate policy keys: Description, Name, Rules",
            ],
        ),
        # Types: a policy is a string, capabilities a list of strings.
        (
            'namespace "d" {\n  policy = 1\n  capabilities = "read-job"\n}',
            [
                'namespace "d": policy must be a string, not a number (line 2)',
                'namespace "d": capabilities must be a list of strings, not a string (line 3)',
            ],
        ),
        (
            'node { policy = "${x}" }',
            [
                "node: policy must be a string, not an interpolated string (line 1)",
                'Invalid node policy "" (line 1)',
            ],
        ),
        # Syntax.
        (
            'namespace "d" {',
            ["Failed to parse ACL Policy: line 1: unexpected end of file (is a brace or quote not closed?)"],
        ),
        (
            '{"namespace": ',
            ["Failed to parse ACL Policy: invalid JSON: Expecting value: line 1 column 15 (char 14)"],
        ),
        # Every problem at once, across rules.
        (
            'namespace "a" { policy = "nope" }\nnode { policy = "nope" }\nplugin { policy = "nope" }',
            [
                'Invalid namespace policy "nope" in namespace "a" (line 1)',
                'Invalid node policy "nope" (line 2)',
                'Invalid plugin policy "nope" (line 3)',
            ],
        ),
    ],
)
def test_every_problem_of_a_bad_policy(rules: str, problems: list[str]) -> None:
    with pytest.raises(PolicyError) as e:
        parse(rules)
    assert e.value.problems == problems


UNKNOWN_AND_REPEATED = """
namespace "default" { policy = "read" }
bogus = 1
anotherbogus { x = 1 }
agent { policy = "read" }
agent { policy = "write" }
node { policy = "read" }
node { policy = "deny" }
namespace "second" { policy = "write" }
"""


def test_strict_parsing_refuses_unknown_and_repeated_keys_lenient_passes_them() -> None:
    with pytest.raises(PolicyError) as e:
        parse(UNKNOWN_AND_REPEATED)
    assert e.value.problems == ["Invalid or duplicate policy keys: agent, anotherbogus, bogus, node"]
    # Read to be applied (a policy stored before a key was known): repeated singular rules merge
    # as separate policies would, deny above all.
    policy = parse(UNKNOWN_AND_REPEATED, strict=False)
    assert (policy.agent, policy.node) == ("write", "deny")
    assert [ns.name for ns in policy.namespaces] == ["default", "second"]


def test_rules_json_is_the_parsed_policy_in_nomads_names() -> None:
    doc = rules_json(parse('namespace "d" {\n policy = "deny"\n variables { path "a" { capabilities = ["read"] } }\n}\n'
                           'node { policy = "read" }\noperator { capabilities = ["snapshot-save"] }'))  # fmt: skip
    assert doc == {
        "Namespaces": [{"Name": "d", "Policy": "deny", "Capabilities": ["deny"],
                        "Variables": {"Paths": [{"PathSpec": "a", "Capabilities": ["read", "list"]}]}}],
        "NodePools": None, "HostVolumes": None, "Agent": None, "Node": {"Policy": "read"},
        "Operator": {"Policy": "", "Capabilities": ["snapshot-save"]}, "Sentinel": None, "Quota": None, "Plugin": None,
    }  # fmt: skip
