"""A task's templates' parts that need no servers: where they may be written, how re-rendered
templates' change modes combine, how a missing dependency is named, and the owner a written
file is given (uid/gid given away where the agent may, a warning where it may not)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from drover.client.tasktemplates import (
    Change,
    Rendered,
    TaskTemplates,
    TemplateError,
    _merged,
    destination,
    missing_words,
    owner,
    script_command,
)
from drover.client.templatesources import TemplateSources
from drover.model.job import Task
from drover.model.taskfiles import ChangeScript, Template


@pytest.mark.parametrize(
    ("dest", "where"),
    [
        ("local/app.conf", "local/app.conf"),
        ("/local/app.conf", "local/app.conf"),
        ("secrets/x", "secrets/x"),
        ("", "local/template-3"),
    ],
)
def test_a_template_is_written_under_the_task_directory(tmp_path: Path, dest: str, where: str) -> None:
    assert destination(tmp_path, Template(dest_path=dest), 3) == (tmp_path / where).resolve()


def test_a_destination_leading_out_of_the_task_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="outside the task's directory"):
        destination(tmp_path, Template(dest_path="../../etc/passwd"), 0)


@pytest.mark.parametrize(
    ("templates", "change"),
    [
        ([Template()], Change(restart=True)),  # restart is the default
        ([Template(change_mode="noop")], Change()),
        ([Template(change_mode="noop", envvars=True)], Change(restart=True)),  # the env changed
        ([Template(change_mode="signal", change_signal="SIGHUP")], Change(signals=("SIGHUP",))),
        (
            [
                Template(change_mode="signal", change_signal="SIGHUP"),
                Template(change_mode="signal", change_signal="SIGUSR1"),
            ],
            Change(signals=("SIGHUP", "SIGUSR1")),
        ),
        (
            [Template(change_mode="signal", change_signal="SIGHUP"), Template()],
            Change(restart=True, signals=("SIGHUP",)),
        ),
    ],
)
def test_the_change_modes_of_re_rendered_templates_combine(templates: list[Template], change: Change) -> None:
    got = Change()
    for t in templates:
        got = _merged(got, t)
    assert (got.restart, got.signals) == (change.restart, change.signals)


def test_a_script_change_mode_keeps_its_template() -> None:
    t = Template(change_mode="script", change_script=ChangeScript(command="/bin/reload", args=["-q"]))
    assert _merged(Change(), t).scripts == (t,)
    assert script_command(t) == ["/bin/reload", "-q"]
    assert script_command(Template(change_script=ChangeScript(command="/bin/sh -c 'x y'"))) == [
        "/bin/sh",
        "-c",
        "x y",
    ]


@pytest.mark.parametrize(
    ("dep", "words"),
    [
        (("var", "app/config"), "nomad.var.block(app/config@default.global)"),
        (("var", "app/config@prod"), "nomad.var.block(app/config@prod.global)"),
        (("service", "web"), "nomad.service(web)"),
        (("varlist", "app/"), "nomad.var.list(app/)"),
    ],
)
def test_a_missing_dependency_is_named_as_nomad_names_it(dep: tuple[str, str], words: str) -> None:
    assert missing_words(dep, "global") == words


@pytest.mark.parametrize(
    ("uid", "gid", "want"),
    [(None, None, (-1, -1)), (1000, None, (1000, -1)), (None, 0, (-1, 0)), (-1, 5, (-1, 5)), (0, 0, (0, 0))],
)
def test_owner(uid: int | None, gid: int | None, want: tuple[int, int]) -> None:
    assert owner(Template(uid=uid, gid=gid)) == want


def _templates(tmp_path: Path, warned: list[str]) -> TaskTemplates:
    sources = TemplateSources(httpx.AsyncClient(), "default")  # never asked: nothing is rendered here
    return TaskTemplates(Task(name="t"), tmp_path, sources, "default", warned.append)


def _write(tt: TaskTemplates, tmp_path: Path, template: Template) -> Path:
    dest = tmp_path / "local" / "out"
    tt._write(0, Rendered(template, dest, "x"))
    return dest


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file away")
def test_root_gives_the_file_to_its_uid_and_gid(tmp_path: Path) -> None:
    warned: list[str] = []
    dest = _write(_templates(tmp_path, warned), tmp_path, Template(uid=1234, gid=2345, perms="0640"))
    st = dest.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777, warned) == (1234, 2345, 0o640, [])


def test_an_agent_that_may_not_give_it_away_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(path: object, uid: int, gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chown", refused)  # what chown answers an agent that is not root
    warned: list[str] = []
    tt = _templates(tmp_path, warned)
    template = Template(dest_path="local/out", uid=1234)
    for _ in range(2):
        dest = _write(tt, tmp_path, template)
    assert dest.read_text() == "x" and dest.stat().st_uid == os.geteuid()
    assert warned == [
        "Template local/out kept the agent's owner: only an agent running as root can give it uid 1234 gid -1"
    ]
    # A template without an owner does not ask.
    _write(tt, tmp_path, Template(dest_path="local/out"))
    assert len(warned) == 1
