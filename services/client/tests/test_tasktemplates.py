"""A task's templates' parts that need no servers: where they may be written, how re-rendered
templates' change modes combine, and how a missing dependency is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from drover.client.tasktemplates import (
    Change,
    TemplateError,
    _merged,
    destination,
    missing_words,
    script_command,
)
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
