"""What the function tests evaluate expressions in: a few variables, a small file tree (the
jobspec in jobs/, run from /work, home /home/ops), and a stand-in for randomness that hands
out 0, 1, 2... so that bcrypt's salt and uuidv4 are known."""

from __future__ import annotations

from typing import Any

import pytest

from drover.jobspec.context import Context
from drover.jobspec.errors import EvalError
from drover.jobspec.evaluate import evaluate
from drover.jobspec.functions import Files, Random, functions
from drover.jobspec.interpolation import known
from drover.jobspec.syntax import parse_body

VARIABLES = {"n": 3, "tags": ["a", "b"], "ports": {"http": 80, "grpc": 90}}

FILES = Files.in_memory(
    {
        "jobs/conf/app.conf": "port = 80\n",
        "jobs/conf/extra.conf": "debug = true\n",
        "jobs/conf/tls/cert.pem": "CERT",
        "jobs/logo.png": b"\x89PNG\xff",
        "/etc/motd": "hi",
        "/home/ops/.netrc": "machine x",
    },
    cwd="/work",
    home="/home/ops",
)


def counting(n: int) -> bytes:
    return bytes(range(n))


class Expressions:
    """Expressions evaluated with the function table of `files` and `random`."""

    def __init__(self, files: Files | None, random: Random | None) -> None:
        self.table = functions(files, "jobs", random)

    def value(self, expr: str) -> Any:
        body = parse_body(f"x = {expr}\n", "t.hcl")
        ctx = Context("t.hcl", variables=VARIABLES, functions=self.table)
        return known(evaluate(body.attributes[0].expr, ctx))

    def check(self, expr: str, expected: Any) -> None:
        """`expr` evaluates to `expected`, of the same Python type (1 is not 1.0, nor True)."""
        got = self.value(expr)
        assert got == expected
        assert type(got) is type(expected)

    def error(self, expr: str) -> str:
        """The message of the error evaluating `expr` gives."""
        with pytest.raises(EvalError) as raised:
            self.value(expr)
        return raised.value.message


@pytest.fixture
def hcl() -> Expressions:
    return Expressions(FILES, counting)


@pytest.fixture
def sealed() -> Expressions:
    """Expressions with neither files nor randomness handed in, as the API parses."""
    return Expressions(None, None)
