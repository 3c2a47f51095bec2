"""The collection functions behave as cty's (table-driven). Where Terraform's differ, Nomad's
are cty's: index looks a key up, length takes no string, lookup needs its default, coalesce
skips only nulls; values of different types are never equal, and a list mixing strings with
numbers or bools is a list of strings."""

from __future__ import annotations

from typing import Any

import pytest

CASES = [
    ("length(var.tags)", 2),
    ("length({ a = 1, b = 2 })", 2),
    ("length([])", 0),
    ('element(["a", "b", "c"], 1)', "b"),
    ('element(["a", "b", "c"], 3)', "a"),
    ('element(["a", "b", "c"], -1)', "c"),
    ("index(var.tags, 1)", "b"),
    ('index(var.ports, "http")', 80),
    ('slice(["a", "b", "c", "d"], 1, 3)', ["b", "c"]),
    ('slice(["a"], 1, 1)', []),
    ('contains(["a", "b"], "b")', True),
    ('contains([1, 2], "1")', False),
    ("contains([1], true)", False),
    ("keys({ b = 1, a = 2 })", ["a", "b"]),
    ("values({ b = 1, a = 2 })", [2, 1]),
    ('lookup(var.ports, "http", 0)', 80),
    ('lookup(var.ports, "ssh", 22)', 22),
    ("merge({ a = 1, b = 2 }, null, { b = 3, c = 4 })", {"a": 1, "b": 3, "c": 4}),
    ("merge()", {}),
    ('zipmap(["a", "b"], [1, [2]])', {"a": 1, "b": [2]}),
    ('concat(["a"], ["b", 1], [])', ["a", "b", 1]),
    ("flatten([[1], [2, [3]], [], null])", [1, 2, 3, None]),
    ('distinct(["a", "b", "a", "c"])', ["a", "b", "c"]),
    ('distinct(["1", 1, "a"])', ["1", "a"]),
    ("chunklist([1, 2, 3, 4, 5], 2)", [[1, 2], [3, 4], [5]]),
    ("chunklist([1, 2], 0)", [[1, 2]]),
    ('coalesce(null, "b")', "b"),
    ('coalesce("", "b")', ""),  # only nulls are skipped
    ('coalesce(null, 1, "b")', "1"),
    ('coalescelist([], ["c", "d"], ["e"])', ["c", "d"]),
    ('compact(["a", "", null, "b", 1])', ["a", "b", "1"]),
    ("range(3)", [0, 1, 2]),
    ("range(-3)", [0, -1, -2]),
    ("range(4, 1)", [4, 3, 2]),
    ("range(1, 8, 2)", [1, 3, 5, 7]),
    ("range(0, 0.5, 0.1)", [0, 0.1, 0.2, 0.3, 0.4]),  # exact steps, as cty adds them
    ('setproduct(["a", "b"], [1, 2])', [["a", 1], ["a", 2], ["b", 1], ["b", 2]]),
    ('setproduct(["a"], [])', []),
    ('setunion(["b", "a"], ["c", "a"])', ["a", "b", "c"]),
    ("setunion([10, 3], [2])", [2, 3, 10]),
    ('setunion([1], ["a"])', ["1", "a"]),
    ('setintersection(["a", "b", "c"], ["b", "c", "d"], ["c", "b"])', ["b", "c"]),
    ('sort(["e", "d", "a", "x"])', ["a", "d", "e", "x"]),
    ("sort([10, 9])", ["10", "9"]),  # as strings
]

ERRORS = [
    ('length("abc")', "collection must be a list, a map or a tuple"),
    ("element([], 0)", "cannot use element function with an empty list"),
    ("element({ a = 1 }, 0)", "cannot read elements from an object"),
    ("index(var.tags, 2)", "invalid index"),
    ('index(var.tags, "1")', "key for list must be number"),
    ('index(var.ports, "ssh")', "invalid index"),
    ('slice(["a"], 0, 2)', "end index must not be greater than the length of the list"),
    ('slice(["a", "b"], 2, 1)', "start index must not be greater than end index"),
    ('contains("abc", "a")', "argument must be list, tuple, or set"),
    ("keys([1])", "a map or object is required, not a list"),
    ('lookup(var.ports, "ssh")', 'expects 3 arguments; "default" is missing'),
    ("merge({ a = 1 }, [1])", "arguments must be maps or objects"),
    ('zipmap(["a"], [1, 2])', "number of keys (1) does not match number of values (2)"),
    ('concat(["a"], "b")', "all arguments must be lists or tuples; got string"),
    ('flatten("a")', "can only flatten lists, sets and tuples"),
    ("distinct([1, true])", "all elements must have the same type"),
    ("chunklist([1], -1)", "the size argument must be positive"),
    ("coalesce(null, null)", "no non-null arguments"),
    ('coalesce([1], "a")', "all arguments must have the same type"),
    ("coalescelist([], null)", "no non-null arguments"),
    ("range(1, 4, -1)", "end must be less than start when step is negative"),
    ("range(0, 1, 0)", "step must not be zero"),
    ("range(2000)", "more than 1024 values were generated"),
    ('setproduct(["a"])', "at least two arguments are required"),
    ('setunion("a")', "a list is required"),
    ('sort(["a", null])', "a null string cannot be sorted"),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_collection_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_collection_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)
