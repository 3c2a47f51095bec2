"""The CIDR functions compute as Nomad's (go-cidr) do (table-driven), IPv4 and IPv6."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ('cidrhost("10.12.112.0/20", 16)', "10.12.112.16"),
    ('cidrhost("10.12.112.0/20", 268)', "10.12.113.12"),
    ('cidrhost("10.12.112.0/20", -1)', "10.12.127.255"),
    ('cidrhost("fd00:fd12:3456:7890:00a2::/72", 34)', "fd00:fd12:3456:7890::22"),
    ('cidrnetmask("172.16.0.0/12")', "255.240.0.0"),
    ('cidrnetmask("fd00::/64")', "ffff:ffff:ffff:ffff::"),
    ('cidrsubnet("172.16.0.0/12", 4, 2)', "172.18.0.0/16"),
    ('cidrsubnet("10.1.2.0/24", 4, 15)', "10.1.2.240/28"),
    ('cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)', "fd00:fd12:3456:7800:a200::/72"),
    (
        'cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)',
        ["10.1.0.0/20", "10.1.16.0/20", "10.1.32.0/24", "10.1.48.0/20"],
    ),
    (
        'cidrsubnets("fd00:fd12:3456:7890::/56", 16, 16, 16, 32)',
        [
            "fd00:fd12:3456:7800::/72",
            "fd00:fd12:3456:7800:100::/72",
            "fd00:fd12:3456:7800:200::/72",
            "fd00:fd12:3456:7800:300::/88",
        ],
    ),
    ('cidrsubnets("10.0.0.0/8")', []),
]

ERRORS = [
    ('cidrhost("10.0.0.0/30", 4)', "prefix of 30 does not accommodate a host numbered 4"),
    ('cidrhost("10.0.0.0", 1)', "invalid CIDR expression"),
    ('cidrnetmask("10.0.0.0/33")', "invalid CIDR expression"),
    ('cidrsubnet("10.1.2.0/24", 4, 16)', "prefix extension of 4 does not accommodate a subnet numbered 16"),
    ('cidrsubnet("10.1.2.0/30", 4, 1)', "insufficient address space to extend prefix of 30 by 4"),
    ('cidrsubnet("fd00::/56", 33, 1)', "may not extend prefix by more than 32 bits"),
    (
        'cidrsubnets("10.0.0.0/24", 1, 1, 1)',
        "not enough remaining address space for a subnet with a prefix of 25 bits",
    ),
    ('cidrsubnets("10.0.0.0/24", 0)', "must extend prefix by at least one bit"),
    (
        'cidrsubnets("10.0.0.0/30", 4)',
        "would extend prefix to 34 bits, which is too long for an IPv4 address",
    ),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_cidr_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_cidr_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
