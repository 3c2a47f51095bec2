"""The filesystem functions behave as Nomad's (table-driven), through the `Files` handed in:
a relative path is taken from the jobspec's directory (jobs/ here), abspath from the working
directory (/work), ~ is the home directory (/home/ops). Without `Files` all eight are refused,
as Nomad's API refuses them."""

from __future__ import annotations

from typing import Any

import pytest

from drover.jobspec import JobspecError, parse
from drover.jobspec.functions import Files

CASES = [
    ('file("conf/app.conf")', "port = 80\n"),
    ('file("/etc/motd")', "hi"),
    ('file("~/.netrc")', "machine x"),
    ('filebase64("logo.png")', "iVBOR/8="),
    ('fileexists("conf/app.conf")', True),
    ('fileexists("conf/missing.conf")', False),
    ('fileset("conf", "*.conf")', ["app.conf", "extra.conf"]),
    ('fileset("conf", "**")', ["app.conf", "extra.conf", "tls/cert.pem"]),
    ('fileset(".", "conf/{app.conf,tls/*}")', ["conf/app.conf", "conf/tls/cert.pem"]),
    ('fileset("conf", "[ae]*.conf")', ["app.conf", "extra.conf"]),
    ('fileset("conf", "nothing*")', []),
    ('fileset("/etc", "*")', ["motd"]),
    ('abspath("x/../y")', "/work/y"),
    ('abspath("/a/./b/")', "/a/b"),
    ('basename("foo/bar/baz.txt")', "baz.txt"),
    ('basename("a/b/")', "b"),
    ('basename("")', "."),
    ('dirname("foo/bar/baz.txt")', "foo/bar"),
    ('dirname("baz")', "."),
    ('dirname("/baz")', "/"),
    ('pathexpand("~/.ssh/id_rsa")', "/home/ops/.ssh/id_rsa"),
    ('pathexpand("/etc/resolv.conf")', "/etc/resolv.conf"),
]

ERRORS = [
    ('file("conf/missing.conf")', "no file exists at jobs/conf/missing.conf"),
    ('file("logo.png")', "contents of logo.png are not valid UTF-8"),
    ('file("~ops/.netrc")', "cannot expand user-specific home dir"),
    ('fileexists("conf")', "jobs/conf is not a regular file"),
    ('fileset("conf", "[ab")', "syntax error in pattern"),
    ('pathexpand("~other/x")', "cannot expand user-specific home dir"),
]

NAMES = ["abspath", "basename", "dirname", "pathexpand", "file", "filebase64", "fileexists", "fileset"]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_filesystem_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_filesystem_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)


@pytest.mark.parametrize("name", NAMES)
def test_filesystem_functions_are_refused_without_files(sealed: Any, name: str) -> None:
    args = '"a", "b"' if name == "fileset" else '"a/b"'
    assert "filesystem functions are disabled" in sealed.error(f"{name}({args})")


def test_a_parse_reads_files_from_the_jobspecs_directory() -> None:
    src = (
        'job "j" {\n group "g" {\n  task "t" {\n   driver = "mock"\n   meta {\n'
        '    conf = file("conf/app.conf")\n    motd = file("/etc/motd")\n   }\n  }\n }\n}\n'
    )
    files = Files.in_memory({"jobs/conf/app.conf": "listen 80\n", "/etc/motd": "hi"})
    job = parse(src, filename="jobs/j.nomad.hcl", files=files)
    assert job["TaskGroups"][0]["Tasks"][0]["Meta"] == {"conf": "listen 80\n", "motd": "hi"}
    with pytest.raises(
        JobspecError, match=r"jobs/j.nomad.hcl:6: .*meta.conf: file\(\): filesystem functions are"
    ):
        parse(src, filename="jobs/j.nomad.hcl")


def test_files_in_memory_imply_their_directories() -> None:
    files = Files.in_memory({"a/b/c.txt": "x", "/etc/motd": "hi"}, cwd="/srv")
    assert files.read("/srv/a/b/c.txt") == b"x"
    assert [files.kind(p) for p in ("a", "a/b", "a/b/c.txt", "nope", "/etc")] == [
        "dir",
        "dir",
        "file",
        None,
        "dir",
    ]
    assert files.listdir("/") == ["etc", "srv"]
    assert files.listdir("a") == ["b"]
    with pytest.raises(FileNotFoundError):
        files.read("a/b")
