"""Nomad's filter expressions (go-bexpr's syntax), parsed and evaluated against JSON documents:
tables of expressions with what they answer, the problems a bad one names, and properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drover.filter import Filter, FilterError, parse
from drover.filter.ast import And, Collection, Match, Not, Op, Or, Selector

JOB: dict[str, Any] = {
    "ID": "web-1",
    "Name": "web",
    "Namespace": "prod",
    "Type": "service",
    "Priority": 50,
    "Stop": False,
    "Datacenters": ["dc1", "dc2"],
    "Meta": {"owner": "ops", "a.b": "dotted", "team-name": "core"},
    "Weights": [1, 2.5, True, "x"],
    "Ratio": 0.5,
    "ParentID": "",
    "Periodic": None,
    "TaskGroups": [
        {"Name": "api", "Count": 3, "Tasks": [{"Name": "server", "Driver": "docker"}]},
        {"Name": "cache", "Count": 1, "Tasks": [{"Name": "redis", "Driver": "exec"}]},
    ],
}

# (expression, what it answers for JOB)
TRUTHS = [
    ('Name == "web"', True),
    ("Name == web", True),
    ("Name == `web`", True),
    ("Name != web", False),
    ('Name != "api"', True),
    ("Priority == 50", True),
    ('Priority == "50"', True),
    ("Priority != 51", True),
    ("Stop == false", True),
    ("Stop == False", True),
    ("Stop == 0", True),
    ("Stop == true", False),
    ("Ratio == 0.5", True),
    ("Meta.owner == ops", True),
    ('Meta["a.b"] == dotted', True),
    ('Meta["team-name"] == core', True),
    ('"/Meta/a.b" == dotted', True),
    ("Meta.missing == x", False),
    ("Meta.missing != x", True),
    ("Meta.missing is empty", True),
    ("Meta.missing is not empty", False),
    ('"x" in Meta.missing', False),
    ('"x" not in Meta.missing', True),
    ("Meta.missing matches x", False),
    ("Meta.missing not matches x", True),
    ("Periodic is nil", True),
    ("Periodic is empty", True),
    ("Periodic.Enabled == true", False),
    ("Meta is not nil", True),
    ('"dc1" in Datacenters', True),
    ("dc3 in Datacenters", False),
    ("dc3 not in Datacenters", True),
    ("Datacenters contains dc2", True),
    ("Datacenters not contains dc2", False),
    ('"owner" in Meta', True),
    ('"ops" in Meta', False),
    ("Meta contains owner", True),
    ('"eb" in Name', True),
    ("Name contains we", True),
    ("Name not contains xyz", True),
    ("2.5 in Weights", True),
    ("1 in Weights", True),
    ("true in Weights", True),
    ("x in Weights", True),
    ("7 in Weights", False),
    ("Datacenters is not empty", True),
    ("ParentID is empty", True),
    ("Meta is empty", False),
    ('Name matches "^w.b$"', True),
    ('Name matches "^api"', False),
    ('Name not matches "^api"', True),
    ("Datacenters.0 == dc1", True),
    ("Datacenters.5 == dc1", False),
    ("TaskGroups.1.Name == cache", True),
    ("any TaskGroups as g { g.Name == cache }", True),
    ("all TaskGroups as g { g.Name matches `^[a-z]+$` }", True),
    ("all TaskGroups as g { g.Count == 3 }", False),
    ("any TaskGroups as g { any g.Tasks as t { t.Driver == docker } }", True),
    ("any TaskGroups as i, g { i == 1 and g.Name == cache }", True),
    ("any TaskGroups as i, _ { i == 5 }", False),
    ("any Meta as k { k == owner }", True),
    ("any Meta as _, v { v == core }", True),
    ("all Meta as k, v { k != v }", True),
    ("any Missing as x { x == 1 }", False),
    ("all Missing as x { x == 1 }", True),
    ("Name == web and Priority == 50", True),
    ("Name == web and Priority == 51", False),
    ("Name == api or Priority == 50", True),
    ("not Name == api", True),
    ("not not Name == web", True),
    ("not (Name == web and Stop == true)", True),
    ("(Name == api or Name == web) and not Stop == true", True),
    ("Name == api or Name == web and Stop == true", False),
    ("Name == web or Name == api and Stop == true", True),
    ("  Name == web  ", True),
    ("(Name == web)", True),
    ("((Name==web))and(Priority==50)", True),
]


@pytest.mark.parametrize(("expression", "expected"), TRUTHS)
def test_an_expression_answers_as_go_bexpr_does(expression: str, expected: bool) -> None:
    assert Filter.parse(expression).matches(JOB) is expected


# (expression, the column it fails at, words of the problem)
PARSE_PROBLEMS = [
    ("", 1, "expected an expression"),
    ("   ", 4, "expected an expression"),
    ("Name ==", 8, "expected a value"),
    ('Name == "web', 9, "Unterminated string literal"),
    ("Name == `web", 9, "Unterminated string literal"),
    ("(Name == web", 1, "Unmatched parentheses"),
    ("Name == web)", 12, "Unmatched parentheses"),
    ("Name = web", 6, "expected an operator"),
    ("Priority == 5x", 13, "Invalid number literal"),
    ("Priority == 05", 13, "Invalid number literal"),
    ("Meta[owner] == x", 6, "Invalid index"),
    ('Meta["owner" == x', 14, "Unclosed index expression"),
    ("x in 3", 6, "Invalid selector"),
    ("3 == Priority", 1, "expected a selector"),
    ('"web" == Name', 1, "expected a selector"),
    ("Name == web and", 16, "expected a selector or a value"),
    ("Name == web Name == api", 13, 'expected "and", "or" or the end'),
    ("Name is full", 6, "expected an operator"),
    ("any TaskGroups g { g.Name == x }", 16, 'expected "as"'),
    ("any TaskGroups as g  g.Name == x }", 22, 'expected "{"'),
    ("any TaskGroups as g { g.Name == x", 34, 'expected "}"'),
    ("any TaskGroups as g, g { g == x }", 1, "names both"),
    ('Name == "\\q"', 10, "invalid escape"),
    ("(" * 150 + "Name == x" + ")" * 150, 101, "nested deeper"),
]


@pytest.mark.parametrize(("expression", "column", "words"), PARSE_PROBLEMS)
def test_a_bad_expression_names_its_problem_and_column(expression: str, column: int, words: str) -> None:
    with pytest.raises(FilterError) as e:
        Filter.parse(expression)
    assert words in str(e.value)
    assert str(e.value).startswith(f"column {column}:"), str(e.value)


def test_a_bad_regular_expression_is_refused_when_parsed() -> None:
    with pytest.raises(FilterError, match="regular expression"):
        Filter.parse('Name matches "(unclosed"')


# (expression, words of the problem) - parsed, but not applicable to JOB
EVALUATION_PROBLEMS = [
    ("Priority contains 5", "Priority is an integer: in and contains"),
    ("Name.First == x", "Name is a string: it has no field 'First'"),
    ("Datacenters == dc1", "Datacenters is a list"),
    ("Meta == x", "Meta is a map"),
    ("Datacenters.first == dc1", "Datacenters is a list: select an element"),
    ("Stop == yes", "'yes' is not a boolean"),
    ("Priority == high", "Priority: "),
    ("Priority is empty", "Priority is an integer: is empty"),
    ("Datacenters matches dc", "Datacenters is a list: matches needs a string"),
    ("any Name as c { c == w }", "Name is a string: any and all"),
]


@pytest.mark.parametrize(("expression", "words"), EVALUATION_PROBLEMS)
def test_an_operator_on_what_it_does_not_apply_to_is_a_problem(expression: str, words: str) -> None:
    f = Filter.parse(expression)
    with pytest.raises(FilterError) as e:
        f.matches(JOB)
    assert words in str(e.value)


def test_the_parse_tree() -> None:
    assert parse('not a.b == 1 or "x" in c["d.e"] and f is empty') == Or(
        Not(Match(Selector(("a", "b")), Op.EQUAL, "1")),
        And(Match(Selector(("c", "d.e")), Op.IN, "x"), Match(Selector(("f",)), Op.IS_EMPTY)),
    )
    assert parse("c contains x") == parse('"x" in c')
    assert parse("a not contains x") == parse("x not in a")
    assert parse('"/a~1b/c~0d" == 1') == Match(Selector(("a/b", "c~d"), pointer=True), Op.EQUAL, "1")
    # A bare word value is the selector's text, as go-bexpr reads it.
    assert parse("a == b.c") == Match(Selector(("a",)), Op.EQUAL, "b.c")
    assert parse('a == "\\t\\u00e9\\x41\\101"') == Match(Selector(("a",)), Op.EQUAL, "\téAA")
    assert parse("a == `\\t`") == Match(Selector(("a",)), Op.EQUAL, "\\t")
    assert parse("any a as x { x == 1 }") == Collection(False, Selector(("a",)), parse("x == 1"), lone="x")
    # Words stand apart: these are selectors, not operators.
    assert parse("notes == 1") == Match(Selector(("notes",)), Op.EQUAL, "1")
    assert parse("android == 1") == Match(Selector(("android",)), Op.EQUAL, "1")
    assert parse("any == 1") == Match(Selector(("any",)), Op.EQUAL, "1")


def test_keep_filters_a_list() -> None:
    docs = [{"Status": s, "ID": str(n)} for n, s in enumerate(["running", "dead", "running", "pending"])]
    assert [d["ID"] for d in Filter.parse("Status == running").keep(docs)] == ["0", "2"]
    assert Filter.parse("Status == gone").keep(docs) == []


# ---- properties ----
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.5, 1.0]),
    st.sampled_from(["", "a", "ab", "b"]),
)
documents = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=8,
)
selectors = st.builds(
    lambda first, rest: ".".join([first, *rest]),
    st.sampled_from("abc"),
    st.lists(st.sampled_from(["a", "b", "c", "0", "1"]), max_size=2),
)
values = st.sampled_from(["a", '"ab"', "`b`", "1", "-5", "0.5", "true", '""'])
matches = st.one_of(
    st.builds(
        lambda s, op, v: f"{s} {op} {v}",
        selectors,
        st.sampled_from(["==", "!=", "contains", "not contains", "matches"]),
        values,
    ),
    st.builds(lambda v, op, s: f"{v} {op} {s}", values, st.sampled_from(["in", "not in"]), selectors),
    st.builds(
        lambda s, op: f"{s} {op}",
        selectors,
        st.sampled_from(["is empty", "is not empty", "is nil", "is not nil"]),
    ),
)
expressions = st.recursive(
    matches,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) and ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) or ({b})", inner, inner),
        st.builds(lambda a: f"not ({a})", inner),
    ),
    max_leaves=6,
)


def _answer(f: Filter, doc: Any) -> bool | None:
    try:
        return f.matches({"a": doc, "b": doc, "c": doc} if not isinstance(doc, dict) else doc)
    except FilterError:
        return None


@settings(max_examples=300, deadline=None)
@given(expressions, documents)
def test_any_expression_of_the_grammar_parses_and_answers_or_names_a_problem(text: str, doc: Any) -> None:
    f = Filter.parse(text)
    answer = _answer(f, doc)
    negated = _answer(Filter.parse(f"not ({text})"), doc)
    # not X answers the opposite of X, and both fail alike.
    assert (answer is None and negated is None) or answer is (not negated)


@settings(max_examples=200, deadline=None)
@given(expressions, expressions, documents)
def test_and_or_follow_de_morgan(x: str, y: str, doc: Any) -> None:
    left = _answer(Filter.parse(f"not (({x}) and ({y}))"), doc)
    right = _answer(Filter.parse(f"(not ({x})) or (not ({y}))"), doc)
    if left is not None and right is not None:
        assert left is right


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab =!"`()[]{}.,-_0123456789notandisemptyinc \t', max_size=30))
def test_any_text_parses_or_is_a_filter_error(text: str) -> None:
    try:
        Filter.parse(text)
    except FilterError as e:
        assert str(e)


def test_a_regular_expression_that_backtracks_for_ever_is_a_problem_not_a_hang() -> None:
    f = Filter.parse('Name matches "(a|aa)+c"')
    with pytest.raises(FilterError, match="took too long"):
        f.matches({"Name": "a" * 60})
    assert Filter.parse('Name matches "(a|aa)+c"').matches({"Name": "aac"})
