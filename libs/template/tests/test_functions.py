"""consul-template's and sprig's functions, with the results its documentation gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from drover.template import Call, ExecError, render

NOW = datetime(2024, 3, 5, 7, 8, 9, tzinfo=UTC)
ENV = {"NOMAD_PORT_db": "5432", "NOMAD_TASK_DIR": "/local", "node.unique.id": "n-1", "EMPTY": ""}
FILES = {"/etc/ec2_version": "  v1.2\n", "cert.pem": "-----BEGIN-----\nabc\n-----END-----\n"}
DATA: dict[str, Any] = {
    "tags": ["production", "web"],
    "pairs": [
        {"Key": "groups/elasticsearch/es1", "Value": "1"},
        {"Key": "groups/elasticsearch/es2", "Value": "2"},
        {"Key": "services/elasticsearch/check", "Value": "x"},
    ],
}

CASES: list[tuple[str, str]] = [
    # env and file
    ('{{ env "NOMAD_PORT_db" }}', "5432"),
    ('{{ env "UNSET" }}', ""),
    ('{{ envOrDefault "UNSET" "dflt" }}', "dflt"),
    ('{{ envOrDefault "EMPTY" "dflt" }}', ""),
    ('{{ file "/etc/ec2_version" | trimSpace }}', "v1.2"),
    ('CERT_PEM={{ file "cert.pem" | toJSON }}', 'CERT_PEM="-----BEGIN-----\\nabc\\n-----END-----\\n"'),
    ('{{ file "" }}', ""),
    # JSON
    ('{{ "a<b>&" | toJSON }}', '"a\\u003cb\\u003e\\u0026"'),
    ('{{ "a<b>" | toUnescapedJSON }}', '"a<b>"'),
    ('{{ parseJSON "{\\"b\\":[1,2.5],\\"a\\":\\"x\\"}" | toJSON }}', '{"a":"x","b":[1,2.5]}'),
    ('{{ parseJSON "{\\"a\\":{\\"b\\":1}}" | toJSONPretty }}', '{\n  "a": {\n    "b": 1\n  }\n}'),
    ('{{ with $d := parseJSON "{\\"name\\":\\"bob\\"}" }}{{ $d.name }}{{ end }}', "bob"),
    ('{{ (parseJSON "{\\"n\\":3}").n }}', "3"),
    ('{{ printf "%T" (parseJSON "{\\"n\\":3}").n }}', "float64"),
    ('{{ parseJSON "" }}', "map[]"),
    ('{{ parseJSON "[1,\\"a\\",true,null]" }}', "[1 a true <nil>]"),
    # parse*
    ('{{ parseInt "42" | add 1 }}', "43"),
    ('{{ parseInt "" }}', "0"),
    ('{{ parseFloat "1.25" }}', "1.25"),
    ('{{ parseBool "true" }}', "true"),
    ('{{ if parseBool "0" }}y{{ else }}n{{ end }}', "n"),
    # strings
    ('{{ "foo\\nbar\\n" | split "\\n" }}', "[foo bar]"),
    ('{{ "a,b,c" | split "," | join ";" }}', "a;b;c"),
    ('{{ "" | split "," | len }}', "0"),
    ('{{ "foo:bar\\nbaz:bat\\n" | splitToMap "\\n" ":" }}', "map[baz:bat foo:bar]"),
    ('{{ "foo.bar" | replaceAll "." "_" }}', "foo_bar"),
    ('{{ "foo.bar" | regexReplaceAll "foo([.a-z]+)" "$1" }}', ".bar"),
    ('{{ "abc-123" | regexReplaceAll "(?P<word>[a-z]+)-(\\\\d+)" "${2}_$word" }}', "123_abc"),
    ('{{ "v1.2.3" | regexMatch "^v\\\\d+" }}', "true"),
    ('{{ "HeLLo" | toLower }} {{ "hello" | toUpper }}', "hello HELLO"),
    ('{{ "hello world-wide" | toTitle }}', "Hello World-Wide"),
    ('{{ "hello world!!" | trim "!!" }}', "hello world"),
    ('{{ "hello world!!" | trimPrefix "hello" }}', " world!!"),
    ('{{ "hello world!!" | trimSuffix "world!!" }}', "hello "),
    ('{{ "  \\t x \\n" | trimSpace }}', "x"),
    ('{{ "a\\nb\\n" | indent 2 }}', "  a\n  b\n"),
    ('{{ "a\\n\\nb" | indent 4 }}', "    a\n\n    b"),
    # encodings and hashes
    ('{{ "hello" | base64Encode }}', "aGVsbG8="),
    ('{{ "aGVsbG8=" | base64Decode }}', "hello"),
    ('{{ "??>" | base64URLEncode }}', "Pz8-"),
    ('{{ "hello" | sha256Hex }}', "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
    ('{{ "hello" | md5sum }}', "5d41402abc4b2a76b9719d911017c592"),
    ('{{ hmacSHA256Hex "msg" "key" }}', "2d93cbc1be167bcb1637a4a23cbff01a7878f0c50ee833954ea5221bb1b8c628"),
    # math, in consul-template's argument order
    ("{{ add 1 2 }}", "3"),
    ("{{ 1 | add 2 }}", "3"),
    ("{{ subtract 2 5 }}", "3"),
    ("{{ 5 | subtract 2 }}", "3"),
    ("{{ multiply 2 5 }}", "10"),
    ("{{ divide 2 10 }}", "5"),
    ("{{ 10 | divide 2 }}", "5"),
    ("{{ divide 2 7 }}", "3"),
    ("{{ divide 2.0 7 }}", "3.5"),
    ("{{ modulo 2 5 }}", "1"),
    ("{{ minimum 2 5 }} {{ 5 | minimum 2 }}", "2 2"),
    ("{{ maximum 2 5 }}", "5"),
    ("{{ add 1.5 1 }}", "2.5"),
    # collections
    ("{{ range loop 3 }}{{ . }}{{ end }}", "012"),
    ("{{ range $i := loop 5 8 }}{{ $i }},{{ end }}", "5,6,7,"),
    ('{{ range loop "2" }}x{{ end }}', "xx"),
    ('{{ if in .tags "production" }}prod{{ end }}', "prod"),
    ('{{ if .tags | contains "web" }}web{{ end }}', "web"),
    ('{{ if contains "nope" .tags }}y{{ else }}n{{ end }}', "n"),
    ('{{ containsAny (sprig_list "x" "web") .tags }}', "true"),
    ('{{ containsAll (sprig_list "web" "production") .tags }}', "true"),
    ('{{ containsAll (sprig_list "web" "x") .tags }}', "false"),
    ('{{ containsNone (sprig_list "x") .tags }}', "true"),
    ('{{ containsNotAll (sprig_list "web" "x") .tags }}', "true"),
    ('{{ "abcdef" | contains "cd" }}', "true"),
    (
        "{{ range $k, $v := .pairs | byKey }}{{ $k }}:{{ range $k2, $p := $v }}{{ $k2 }} {{ end }};{{ end }}",
        "groups:elasticsearch/es1 elasticsearch/es2 ;services:elasticsearch/check ;",
    ),
    ("{{ (.pairs | explode).groups.elasticsearch.es2 }}", "2"),
    (
        "{{ .pairs | explode | toJSON }}",
        '{"groups":{"elasticsearch":{"es1":"1","es2":"2"}},"services":{"elasticsearch":{"check":"x"}}}',
    ),
    ('{{ scratch.Set "a" 1 }}{{ scratch.Get "a" }}{{ scratch.Key "a" }}{{ scratch.Key "b" }}', "1truefalse"),
    (
        '{{ scratch.MapSet "e" "foo/bar" "a" }}{{ scratch.MapSet "e" "foo/baz" "b" }}'
        '{{ scratch.Get "e" | explodeMap | toJSON }}',
        '{"foo":{"bar":"a","baz":"b"}}',
    ),
    ('{{ scratch.SetX "k" 1 }}{{ scratch.SetX "k" 2 }}{{ scratch.Get "k" }}', "1"),
    # time: the caller's
    ("{{ timestamp }}", "2024-03-05T07:08:09Z"),
    ('{{ timestamp "unix" }}', "1709622489"),
    ('{{ timestamp "2006-01-02 15:04:05" }}', "2024-03-05 07:08:09"),
    ('{{ timestamp "Jan _2 Mon 3:04PM" }}', "Mar  5 Tue 7:08AM"),
    # sprig
    ('{{ "" | sprig_default "dflt" }}', "dflt"),
    ('{{ "set" | sprig_default "dflt" }}', "set"),
    ("{{ .nope | sprig_default 8080 }}", "8080"),
    ('{{ sprig_list 1 "a" 2 }}', "[1 a 2]"),
    ('{{ sprig_list "a" "b" | sprig_join "," }}', "a,b"),
    ('{{ sprig_trim "  x  " }}|{{ sprig_upper "a" }}|{{ sprig_lower "B" }}', "x|A|b"),
    ('{{ sprig_quote "a" "b\\"c" }}', '"a" "b\\"c"'),
    ('{{ sprig_squote "a" }}', "'a'"),
    ('{{ sprig_b64enc "hi" }} {{ sprig_b64dec "aGk=" }}', "aGk= hi"),
    ("{{ sprig_add 1 2 3 }} {{ sprig_sub 5 2 }} {{ sprig_mul 2 3 4 }} {{ sprig_div 7 2 }}", "6 3 24 3"),
    ("{{ sprig_max 1 9 3 }} {{ sprig_min 4 2 8 }}", "9 2"),
    ('{{ sprig_ternary "y" "n" true }}', "y"),
    ('{{ $d := sprig_dict "a" 1 "b" 2 }}{{ $d.b }} {{ sprig_hasKey $d "a" }}', "2 true"),
    ('{{ sprig_replace "a" "b" "banana" }}', "bbnbnb"),
    ('{{ sprig_hasPrefix "ba" "banana" }} {{ sprig_contains "nan" "banana" }}', "true true"),
    ('{{ "x" | sprig_repeat 3 }}', "xxx"),
    ("{{ sprig_until 3 }}", "[0 1 2]"),
    ('{{ sprig_splitList "," "a,b" }}', "[a b]"),
    ('{{ "a\\nb" | sprig_nindent 2 }}', "\n  a\n  b"),
    ('{{ sprig_coalesce "" .nope "z" }}', "z"),
    ('{{ sprig_toJson (sprig_list 1 "a") }}', '[1,"a"]'),
    ("{{ sprig_first (sprig_list 3 4) }} {{ sprig_last (sprig_list 3 4) }}", "3 4"),
    ('{{ sprig_empty "" }} {{ sprig_empty 1 }}', "true false"),
    ('{{ sprig_sha256sum "hello" }}', "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_function(text: str, expected: str) -> None:
    call = Call(env=ENV, read_file=FILES.get, now=NOW)
    assert render(text, call, name="t", data=DATA).text == expected


def test_timestamp_keeps_the_zone_handed_in() -> None:
    now = NOW.astimezone(timezone(timedelta(hours=2)))
    assert render("{{ timestamp }}", Call(now=now)).text == "2024-03-05T09:08:09+02:00"


def test_env_and_file_are_recorded_and_an_unreadable_file_is_missing() -> None:
    out = render(
        '{{ env "A" }}{{ file "here" }}{{ file "gone" }}', Call(env={"A": "1"}, read_file={"here": "x"}.get)
    )
    assert out.text == "1x"
    assert [tuple(d) for d in out.used] == [("env", "A"), ("file", "here"), ("file", "gone")]
    assert [tuple(d) for d in out.missing] == [("file", "gone")]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{{ mustEnv "UNSET" }}', "required environment variable UNSET is empty"),
        ('{{ parseBool "maybe" }}', 'parseBool: strconv.ParseBool: parsing "maybe": invalid syntax'),
        ('{{ parseFloat "x" }}', 'strconv.ParseFloat: parsing "x": invalid syntax'),
        ('{{ base64Decode "!!" }}', "base64Decode: illegal base64 data"),
        ("{{ divide 0 1 }}", "integer divide by zero"),
        ('{{ add "a" 1 }}', 'add: unknown type for "a" (string)'),
        ('{{ indent -1 "x" }}', "indent value must be a positive integer"),
        ("{{ loop 1 2 3 }}", "loop: wrong number of arguments, expected 1 or 2, but got 3"),
        ('{{ regexMatch "(" "x" }}', "error parsing regexp"),
        ('{{ timestamp "a" "b" }}', "timestamp: wrong number of arguments, expected 0 or 1, but got 2"),
        ('{{ join "," "notalist" }}', 'can\'t handle "notalist" for arg of type []string'),
        ('{{ join "," .n }}', "wrong type for value; expected []string; got int"),
    ],
)
def test_function_errors(text: str, words: str) -> None:
    with pytest.raises(ExecError) as raised:
        render(text, Call(), name="t", data={"n": 1})
    assert words in str(raised.value)


def test_the_registry_is_the_callers_to_extend() -> None:
    from drover.template import Function, check, default_functions, parse
    from drover.template.registry import STRING

    functions = default_functions().with_functions({"shout": Function(lambda s: s.upper() + "!", (STRING,))})
    assert parse('{{ "hi" | shout }}', functions=functions).render().text == "HI!"
    assert check('{{ shout "x" }}', known=frozenset(functions)) == []
    assert check('{{ shout "x" }}') == ['template: :1: function "shout" not defined']
    without = default_functions().without("env")
    assert check('{{ env "X" }}', known=frozenset(without)) == ['template: :1: function "env" not defined']


def test_a_failing_function_is_an_error_calling_it() -> None:
    from drover.template import Function, default_functions, parse

    def broken(_: object) -> str:
        raise AttributeError("no such thing")

    functions = default_functions().with_functions({"broken": Function(broken, ("interface {}",))})
    with pytest.raises(ExecError, match=r"error calling broken: no such thing"):
        parse("{{ broken 1 }}", "t", functions=functions).render()


def test_without_data_dot_has_no_value_as_consul_template_renders() -> None:
    assert render("{{ . }}|{{ .Anything }}|{{ .a.b }}").text == "<no value>|<no value>|<no value>"
