"""The jobspec corpus (tests/fixtures/jobspecs): each `x.nomad.hcl` parses to the API JSON in
`x.json`, and that job is one the API's register accepts (canonicalized, then validated);
each jobspec under bad/ fails with every problem its `# expect:` lines name, file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drover.jobspec import JobspecError, parse
from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.validation import validate_job

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
                  "update", "migrate", "disconnect", "variable", "locals", "dynamic", "<<-", "<<EOH"):  # fmt: skip
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
