"""Constraint operands and interpolation, with Nomad's semantics."""

from __future__ import annotations

import itertools

import pytest

from drover.model import Affinity, Constraint, Node
from drover.scheduler import constraints as cmod
from drover.scheduler.constraints import check_operand, is_escaped, match_calls, matches, resolve_target

NODE = Node(
    id="9f0c6c5e-node",
    name="worker-1",
    datacenter="dc1",
    node_class="large",
    node_pool="prod",
    attributes={
        "kernel.name": "linux",
        "cpu.numcores": "8",
        "nomad.version": "1.7.2",
        "unique.hostname": "worker-1.example",
        "empty": "",
    },
    meta={"rack": "r1", "tags": "gpu, ssd ,fast", "unique.serial": "SN-1"},
)

# --------------------------------------------------------------------------------------------
# resolve_target
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("linux", ("linux", True)),
        ("", ("", True)),
        ("x${attr.kernel.name}", ("x${attr.kernel.name}", True)),  # only a leading "${" interpolates
        ("${node.unique.id}", ("9f0c6c5e-node", True)),
        ("${node.datacenter}", ("dc1", True)),
        ("${node.unique.name}", ("worker-1", True)),
        ("${node.class}", ("large", True)),
        ("${node.pool}", ("prod", True)),
        ("${attr.kernel.name}", ("linux", True)),
        ("${attr.unique.hostname}", ("worker-1.example", True)),
        ("${attr.empty}", ("", True)),
        ("${attr.missing}", ("", False)),
        ("${meta.rack}", ("r1", True)),
        ("${meta.unique.serial}", ("SN-1", True)),
        ("${meta.missing}", ("", False)),
        ("${node.foo}", ("", False)),
        ("${node.unique.foo}", ("", False)),
        ("${env.HOME}", ("", False)),
    ],
)
def test_resolve_target(target: str, expected: tuple[str, bool]) -> None:
    assert resolve_target(target, NODE) == expected


# --------------------------------------------------------------------------------------------
# check_operand: every operand, both outcomes, unset values
# --------------------------------------------------------------------------------------------

S, U = True, False  # set / unset

OPERAND_CASES = [
    # equality
    ("=", "foo", S, "foo", S, True),
    ("=", "foo", S, "bar", S, False),
    ("==", "foo", S, "foo", S, True),
    ("is", "foo", S, "foo", S, True),
    ("is", "foo", S, "Foo", S, False),
    ("=", "", U, "", S, False),  # unset never equals, not even ""
    ("=", "foo", S, "", U, False),
    ("=", "", U, "", U, False),
    # inequality: exactly one side unset -> not equal; both unset -> equal
    ("!=", "foo", S, "foo", S, False),
    ("!=", "foo", S, "bar", S, True),
    ("not", "foo", S, "bar", S, True),
    ("not", "foo", S, "foo", S, False),
    ("!=", "", U, "foo", S, True),
    ("!=", "", U, "", S, True),
    ("!=", "foo", S, "", U, True),
    ("!=", "", U, "", U, False),
    # ordering: integers, then floats, then lexical
    ("<", "1", S, "10", S, True),
    ("<", "10", S, "1", S, False),  # numeric, not lexical
    ("<", "9", S, "10", S, True),
    ("<=", "10", S, "10", S, True),
    (">", "10", S, "9", S, True),
    (">=", "9", S, "10", S, False),
    ("<", "-5", S, "3", S, True),
    ("<", "1.5", S, "10.5", S, True),
    ("<", "10.5", S, "1.5", S, False),
    ("<", "1", S, "1.5", S, True),  # int vs float -> float compare
    (">=", "2.0", S, "2", S, True),
    ("<", "1e3", S, "999", S, False),  # floats in exponent form
    ("<", "bar", S, "foo", S, True),  # lexical
    (">", "bar", S, "foo", S, False),
    ("<=", "foo", S, "foo", S, True),
    (">=", "bar", S, "bar", S, True),
    (">", "1", S, "foo", S, False),  # mixed -> lexical: "1" < "f"
    ("<", "abc", S, "abd", S, True),
    ("<", "10", S, "9a", S, True),  # one side not a number -> lexical
    ("<", " 1", S, "0", S, True),  # Go does not trim spaces: lexical, " " < "0"
    ("<", "1_0", S, "9", S, True),  # no "_" separators in Go: lexical
    ("<", "1e400", S, "2", S, True),  # overflows float64 in Go: lexical
    ("<", "nan", S, "1", S, False),  # NaN is unordered
    (">", "nan", S, "1", S, False),
    ("<", "", U, "1", S, False),
    (">", "1", S, "", U, False),
    # regexp: unanchored search, invalid patterns never match
    ("regexp", "foobar", S, "bar", S, True),
    ("regexp", "foobar", S, "^foo", S, True),
    ("regexp", "foobar", S, "^bar", S, False),
    ("regexp", "zipzap", S, "foo", S, False),
    ("regexp", "foobarbaz", S, r"[\w]+", S, True),
    ("regexp", "linux-5.15", S, r"^linux-\d+\.\d+$", S, True),
    ("regexp", "foo", S, "(unclosed", S, False),
    ("regexp", "", U, ".*", S, False),
    ("regexp", "foo", S, "", U, False),
    # set_contains (= set_contains_all): every right item in the left set, items trimmed
    ("set_contains", "foo,bar,baz", S, "foo,  bar  ", S, True),
    ("set_contains", "foo,bar,baz", S, "foo,bam", S, False),
    ("set_contains_all", "foo, bar ,baz", S, "baz,foo", S, True),
    ("set_contains_all", "foo,bar", S, "foo,bar,baz", S, False),
    ("set_contains", "foo", S, "fo", S, False),  # whole items, not substrings
    ("set_contains", "", U, "foo", S, False),
    # set_contains_any
    ("set_contains_any", "foo,bar,baz", S, "bam, baz", S, True),
    ("set_contains_any", "foo,bar,baz", S, "bam,qux", S, False),
    ("set_contains_any", "foo", S, "", U, False),
    # is_set / is_not_set look only at the left side
    ("is_set", "foo", S, "", U, True),
    ("is_set", "", S, "", U, True),  # set to "" is still set
    ("is_set", "", U, "", U, False),
    ("is_not_set", "", U, "", U, True),
    ("is_not_set", "foo", S, "", U, False),
    # version / semver need both sides
    ("version", "1.2.3", S, "~> 1.0", S, True),
    ("version", "", U, "~> 1.0", S, False),
    ("semver", "1.2.3", S, ">= 1.0", S, True),
    ("semver", "", U, ">= 1.0", S, False),
    # unknown operands never hold
    ("~=", "foo", S, "foo", S, False),
    ("", "foo", S, "foo", S, False),
]


@pytest.mark.parametrize(("op", "lval", "lfound", "rval", "rfound", "expected"), OPERAND_CASES)
def test_check_operand(op: str, lval: str, lfound: bool, rval: str, rfound: bool, expected: bool) -> None:
    assert check_operand(op, lval, lfound, rval, rfound) is expected


def test_every_operand_is_covered() -> None:
    from drover.model.job import CONSTRAINT_OPERANDS

    covered = {case[0] for case in OPERAND_CASES} | cmod.DISTINCT_OPERANDS
    assert set(CONSTRAINT_OPERANDS) <= covered


@pytest.mark.parametrize("op", ["distinct_hosts", "distinct_property"])
def test_check_operand_refuses_placement_operands(op: str) -> None:
    with pytest.raises(ValueError, match=op):
        check_operand(op, "a", True, "b", True)


# --------------------------------------------------------------------------------------------
# version: hashicorp/go-version semantics
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        # the pessimistic operator
        ("1.2.3", "~> 1.0", True),
        ("2.0.1", "~> 1.0", False),
        ("1.2.5", "~> 1.2.3", True),
        ("1.2.3", "~> 1.2.3", True),
        ("1.2.2", "~> 1.2.3", False),
        ("1.3.0", "~> 1.2.3", False),
        ("1.9", "~> 1.2", True),
        ("2.0", "~> 1.2", False),
        ("1.1", "~> 1.2", False),
        # several constraints, all must hold
        ("1.2.3", ">= 1.0, < 1.4", True),
        ("1.4", ">= 1.0, < 1.4", False),
        ("1.4.0", ">=1.0,<1.4", False),
        ("2.5.0", "> 2.0, != 2.5.0", False),
        ("2.5.1", "> 2.0, != 2.5.0", True),
        ("1.2.3", " >= 1.2.3 , <= 1.2.3 ", True),
        # equality, padding, "v" prefix, metadata ignored
        ("1.2.0", "= 1.2", True),
        ("1.2.0", "1.2", True),  # no operator means "="
        ("v1.2.3", "= 1.2.3", True),
        ("1", "~> 1.0", True),
        ("1.3.0-beta1+ent", "= 1.3.0-beta1", True),
        ("1.2.3+build.7", "= 1.2.3", True),
        ("1.2.3", "= 1.2.4", False),
        ("1.2.3", "!= 1.2.4", True),
        # numbers are not compared lexically
        ("10.0.0", "> 9.0.0", True),
        ("8", "> 10", False),
        # pre-releases only satisfy ranges whose own version is a pre-release of the same core
        ("1.3.0-beta1", ">= 0.6.1", False),
        ("1.7.0-alpha1", ">= 1.6.0-beta1", False),
        ("1.6.0-beta2", ">= 1.6.0-beta1", True),
        ("1.6.0-beta1", "> 1.6.0-beta2", False),
        ("1.6.0-rc1", "< 1.6.0", False),  # below 1.6.0, yet not admitted
        ("1.6.0", ">= 1.6.0-beta1", True),  # a release satisfies a pre-release lower bound
        ("1.6.0-beta.2", "= 1.6.0-beta.2", True),
        ("1.6.0-beta.2", "= 1.6.0-beta.3", False),
        ("1.2.3-beta2", "~> 1.2.3-beta1", True),
        ("1.2.3", "~> 1.2.3-beta1", False),  # "~>" with a pre-release admits only pre-releases
        ("1.2.3-beta1", "~> 1.2", False),
        # go-version's lenient grammar: no dash needed before a lettered pre-release
        ("1.0beta1", ">= 1.0-alpha", True),
        ("1.0rc1", "= 1.0-rc1", True),
        # malformed on either side never matches
        ("linux", ">= 1.0", False),
        ("1.2.3", ">= 1.x", False),
        ("1.2.3", "", False),
        ("1.2.3", ">= 1.0,", False),
        ("1.2.3", "=> 1.0", False),
        ("1.2.3", "^1.0", False),
        (" 1.2.3", ">= 1.0", False),
        ("1.2.3", "= 11387778780781445675529500000000000000000", False),  # out of int64
    ],
)
def test_version(version: str, constraint: str, expected: bool) -> None:
    assert check_operand("version", version, True, constraint, True) is expected


# --------------------------------------------------------------------------------------------
# semver: Semver 2.0 ordering
# --------------------------------------------------------------------------------------------

SEMVER_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0-0",
    "1.1.0",
    "2.0.0",
]


@pytest.mark.parametrize(("lower", "higher"), list(itertools.pairwise(SEMVER_ORDER)))
def test_semver_precedence(lower: str, higher: str) -> None:
    assert check_operand("semver", lower, True, f"< {higher}", True)
    assert check_operand("semver", higher, True, f"> {lower}", True)
    assert not check_operand("semver", lower, True, f">= {higher}", True)
    assert not check_operand("semver", higher, True, f"<= {lower}", True)
    assert check_operand("semver", lower, True, f"!= {higher}", True)


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("1.2.3", ">= 1.0, < 1.4", True),
        ("1.4", ">= 1.0, < 1.4", False),
        # pre-releases are ordinary versions, ordered by the spec
        ("1.3.0-beta1", ">= 0.6.1", True),
        ("1.7.0-alpha1", ">= 1.6.0-beta1", True),
        ("1.7.0-beta", ">= 1.7.0", False),
        ("1.7.0", ">= 1.7.0-dev", True),
        ("1.7.0-beta.1", ">= 1.7.0-a", True),
        ("1.7.0-rc.1", ">= 1.7.0-dev", True),
        ("2.1.0-beta", "> 2.0", True),
        ("2.1.0", "> 2.1.0-a", True),
        ("2.0.0", "<= 2.1.0-a", True),
        ("1.0-rc1", "> 1.0-beta1", True),
        # numeric identifiers numerically, and below alphanumeric ones
        ("1.0.0-2", "< 1.0.0-10", True),
        ("1.0.0-10", "< 1.0.0-a", True),
        ("1.0.0-alpha", "< 1.0.0-alpha.0", True),  # more identifiers rank higher
        # build metadata is ignored
        ("1.3.0-beta1+ent", "= 1.3.0-beta1", True),
        ("1.3.0-beta1+ent", "= 1.3.0-beta1+cgo", True),
        ("1.3.0-beta1+ent", "> 1.3.0-beta1+cgo", False),
        ("1.2.3", "1.2.3", True),
        ("v1.2.3", "= 1.2.3", True),
        # no pessimistic operator, and constraints need the dash before a pre-release
        ("1.2.3", "~> 1.0", False),
        ("1", "~> 1.0", False),
        ("1.0.0", ">= 1.0beta1", False),
        ("1.2.3", ">= 1.x", False),
        ("not-a-version", ">= 1.0", False),
    ],
)
def test_semver(version: str, constraint: str, expected: bool) -> None:
    assert check_operand("semver", version, True, constraint, True) is expected


def test_version_and_semver_differ_on_prereleases() -> None:
    # The reason both operands exist.
    assert not check_operand("version", "1.3.0-beta1", True, ">= 1.0", True)
    assert check_operand("semver", "1.3.0-beta1", True, ">= 1.0", True)


def test_parsers_are_cached() -> None:
    cmod._version_constraints.cache_clear()
    cmod._compile_regexp.cache_clear()
    for _ in range(5):
        check_operand("version", "1.2.3", True, ">= 1.0, < 2.0", True)
        check_operand("regexp", "abc", True, "^a.c$", True)
    assert cmod._version_constraints.cache_info().misses == 1
    assert cmod._version_constraints.cache_info().hits == 4
    assert cmod._compile_regexp.cache_info().misses == 1
    assert cmod._compile_regexp.cache_info().hits == 4


# --------------------------------------------------------------------------------------------
# matches / is_escaped
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ltarget", "operand", "rtarget", "expected"),
    [
        ("${attr.kernel.name}", "=", "linux", True),
        ("${attr.kernel.name}", "=", "windows", False),
        ("${node.datacenter}", "=", "dc1", True),
        ("${node.class}", "!=", "small", True),
        ("${node.pool}", "==", "prod", True),
        ("${node.unique.name}", "regexp", "^worker-[0-9]+$", True),
        ("${node.unique.id}", "is", "9f0c6c5e-node", True),
        ("${attr.cpu.numcores}", ">=", "4", True),
        ("${attr.cpu.numcores}", ">", "16", False),
        ("${attr.nomad.version}", "version", ">= 1.6, < 1.8", True),
        ("${attr.nomad.version}", "semver", ">= 1.8.0", False),
        ("${meta.tags}", "set_contains", "ssd,gpu", True),
        ("${meta.tags}", "set_contains_any", "arm,fast", True),
        ("${meta.rack}", "=", "${meta.rack}", True),  # both sides interpolated
        ("${attr.missing}", "is_not_set", "", True),
        ("${attr.missing}", "is_set", "", False),
        ("${attr.missing}", "!=", "linux", True),
        ("${attr.missing}", "=", "", False),
        ("${attr.missing}", "<", "5", False),
        ("${attr.missing}", "version", ">= 1.0", False),
    ],
)
def test_matches(ltarget: str, operand: str, rtarget: str, expected: bool) -> None:
    assert matches(Constraint(ltarget=ltarget, operand=operand, rtarget=rtarget), NODE) is expected
    assert matches(Affinity(ltarget=ltarget, operand=operand, rtarget=rtarget, weight=50), NODE) is expected


@pytest.mark.parametrize("operand", ["distinct_hosts", "distinct_property"])
def test_matches_refuses_placement_operands(operand: str) -> None:
    with pytest.raises(ValueError, match=operand):
        matches(Constraint(ltarget="${meta.rack}", operand=operand, rtarget="1"), NODE)


def test_match_calls_counts_evaluations() -> None:
    before = match_calls()
    c = Constraint(ltarget="${attr.kernel.name}", operand="=", rtarget="linux")
    for _ in range(3):
        matches(c, NODE)
    assert match_calls() - before == 3


@pytest.mark.parametrize(
    ("ltarget", "rtarget", "expected"),
    [
        ("${attr.kernel.name}", "linux", False),
        ("${node.datacenter}", "dc1", False),
        ("${node.class}", "${meta.rack}", False),
        ("${node.unique.id}", "abc", True),
        ("${node.unique.name}", "worker-1", True),
        ("${attr.unique.hostname}", "x", True),
        ("${meta.unique.serial}", "x", True),
        ("linux", "${attr.unique.network.ip-address}", True),  # either side
        ("${unique.legacy}", "x", True),
        ("unique.hostname", "x", False),  # a literal, not an interpolation
    ],
)
def test_is_escaped(ltarget: str, rtarget: str, expected: bool) -> None:
    plain = Constraint(ltarget="${attr.os}", operand="=", rtarget="linux")
    c = Constraint(ltarget=ltarget, operand="=", rtarget=rtarget)
    assert is_escaped([plain, c]) is expected
    assert is_escaped([Affinity(ltarget=ltarget, operand="=", rtarget=rtarget)]) is expected


def test_is_escaped_empty() -> None:
    assert is_escaped([]) is False
