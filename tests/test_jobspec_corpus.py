"""The jobspec corpus (tests/fixtures/jobspecs): each `x.nomad.hcl` parses to the API JSON in
`x.json`, and that job is one the API's register accepts (canonicalized, then validated) and
reads back whole: `/v1/jobs/parse`, register and `GET /v1/job/:id` keep every member the
jobspec gave, adding only canonical defaults. Each jobspec under bad/ fails with every problem
its `# expect:` lines name, file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from drover.api.app import create_app
from drover.jobspec import JobspecError, parse
from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.validation import validate_job
from drover.runtime.settings import Settings
from drover.runtime.store import EventStore

CORPUS = Path(__file__).parent / "fixtures" / "jobspecs"
GOOD = sorted(CORPUS.glob("*.nomad.hcl"))
BAD = sorted((CORPUS / "bad").glob("*.nomad.hcl"))


def _parse(path: Path) -> dict[str, object]:
    return parse(path.read_text(), filename=path.name)


def test_the_corpus_covers_what_nomad_users_write() -> None:
    text = "\n".join(p.read_text() for p in GOOD)
    for job_type in ("service", "batch", "system", "sysbatch"):
        assert f'type        = "{job_type}"' in text or job_type == "service", job_type
    for block in ("periodic", "parameterized", "spread", "affinity", "constraint", "reschedule", "restart",
                  "update", "migrate", "disconnect", "variable", "locals", "dynamic", "<<-", "<<EOH",
                  "network", "service", "check", "template", "artifact", "volume", "volume_mount",
                  "lifecycle", "scaling", "vault", "identity", "poststop"):  # fmt: skip
        assert block in text, f"no jobspec in the corpus has {block}"
    assert len(BAD) >= 8


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_jobspec_parses_to_the_expected_api_json(path: Path) -> None:
    expected = json.loads(path.with_name(path.name.removesuffix(".nomad.hcl") + ".json").read_text())
    assert _parse(path) == expected


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_parsed_job_passes_register_validation(path: Path) -> None:
    job = canonicalize(Job.model_validate(_parse(path)))
    assert validate_job(job) == []
    # What the API keeps of the job is what the jobspec said.
    assert job.id == _parse(path)["ID"]
    assert [tg.name for tg in job.task_groups] == [tg["Name"] for tg in _parse(path)["TaskGroups"]]  # type: ignore[index]


@pytest.fixture(scope="module")
def api(module_database_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=module_database_url, nats_url="nats://unused")
    with TestClient(create_app(settings, EventStore(module_database_url))) as client:
        yield client


# What canonicalizing may change of a value the jobspec gave (Nomad's api Canonicalize does the
# same): a template's change signal is upper-cased.
_CANONICAL_VALUES = {"ChangeSignal": str.upper}


def _dropped(given: Any, kept: Any, where: str = "Job") -> list[str]:
    """Where `kept` lacks or changed what `given` holds; members `kept` adds are defaults."""
    if given is None:
        return []
    if isinstance(given, dict):
        if not isinstance(kept, dict):
            return [f"{where}: {given!r} read back as {kept!r}"]
        out: list[str] = []
        for key, value in given.items():
            if key not in kept:
                out += [] if value is None else [f"{where}.{key} was dropped"]
            elif key in _CANONICAL_VALUES and isinstance(value, str):
                out += _dropped(_CANONICAL_VALUES[key](value), kept[key], f"{where}.{key}")
            else:
                out += _dropped(value, kept[key], f"{where}.{key}")
        return out
    if isinstance(given, list):
        if not isinstance(kept, list) or len(kept) != len(given):
            return [f"{where}: {given!r} read back as {kept!r}"]
        return [
            p
            for i, (g, k) in enumerate(zip(given, kept, strict=True))
            for p in _dropped(g, k, f"{where}[{i}]")
        ]
    return [] if given == kept else [f"{where}: {given!r} read back as {kept!r}"]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_jobspec_round_trips_through_parse_register_and_read(api: TestClient, path: Path) -> None:
    expected = json.loads(path.with_name(path.name.removesuffix(".nomad.hcl") + ".json").read_text())
    r = api.post("/v1/jobs/parse", json={"JobHCL": path.read_text()})
    assert r.status_code == 200, r.text
    parsed = r.json()
    assert parsed == expected
    r = api.put("/v1/jobs", json={"Job": parsed})
    assert r.status_code == 200, r.text
    assert "dropped" not in r.json()["Warnings"], r.json()["Warnings"]
    namespace = parsed.get("Namespace", "default")
    r = api.get(f"/v1/job/{parsed['ID']}", params={"namespace": namespace})
    assert r.status_code == 200, r.text
    assert _dropped(parsed, r.json()) == []


def test_a_member_dropped_or_changed_is_found() -> None:
    given = {"TaskGroups": [{"Networks": [{"DynamicPorts": [{"Label": "http", "To": 80}]}], "Meta": None}]}
    kept = {"TaskGroups": [{"Networks": [{"DynamicPorts": [{"Label": "http"}]}], "Count": 1}]}
    assert _dropped(given, kept) == ["Job.TaskGroups[0].Networks[0].DynamicPorts[0].To was dropped"]
    assert (
        _dropped({"Templates": [{"ChangeSignal": "sighup"}]}, {"Templates": [{"ChangeSignal": "SIGHUP"}]})
        == []
    )
    assert _dropped({"Count": 2}, {"Count": 3}) == ["Job.Count: 2 read back as 3"]


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_malformed_jobspec_fails_naming_file_and_line(path: Path) -> None:
    expected = [
        line.removeprefix("# expect: ")
        for line in path.read_text().splitlines()
        if line.startswith("# expect: ")
    ]
    assert expected, f"{path.name} says nothing of what it expects"
    with pytest.raises(JobspecError) as raised:
        _parse(path)
    problems = raised.value.problems
    for want in expected:
        assert any(p.startswith(want) for p in problems), f"{want!r} not in {problems}"
    assert all(p.startswith(f"{path.name}:") for p in problems), problems
