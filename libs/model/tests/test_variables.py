"""Variables' rules as Nomad's: valid paths and the reserved `nomad/` tree, a write's problems,
a lock-acquire's settings and their bounds, and a lock lapsing after its TTL and LockDelay."""

from __future__ import annotations

import pytest

from drover.model.variables import (
    DEFAULT_LOCK_DELAY,
    DEFAULT_LOCK_TTL,
    SECOND,
    LockRequest,
    VariableLock,
    lock_settings,
    path_problems,
    set_problems,
)


@pytest.mark.parametrize(
    ("path", "valid"),
    [
        ("app/config", True), ("a", True), ("a-b_c~d/e", True), ("a" * 128, True), ("a" * 129, False),
        ("", False), ("app config", False), ("app.config", False), ("app@x", False), ("ünï", False),
        ("nomad", False), ("nomad/jobs", True), ("nomad/jobs/web/g/t", True), ("nomad/sentinel/x", True),
        ("nomad/job-templates", False), ("nomad/job-templates/t", True), ("nomad/job-templates/t/x", False),
        ("nomad/other", False), ("nomads/other", True),
    ],
)  # fmt: skip
def test_paths_as_nomad_validates_them(path: str, valid: bool) -> None:
    assert (path_problems(path) == []) is valid


@pytest.mark.parametrize(
    ("namespace", "items", "lock", "problems"),
    [
        ("default", {"a": "b"}, None, []),
        ("*", {"a": "b"}, None, ['can not target wildcard ("*")namespace']),
        ("default", {}, None, ["variable missing required Items object"]),
        ("default", None, None, ["variable missing required Items object"]),
        ("default", {"k": "x" * 65536}, None, ["variables are limited to 64KiB in total size"]),
        ("default", {"k": "x" * 65535}, None, []),
        ("default", {"a": "b"}, LockRequest(ttl="15s"), ["variable should not contain lock definition"]),
        ("default", {"a": "b"}, LockRequest(id="holder"), []),
        ("*", {}, LockRequest(lock_delay=5), ['can not target wildcard ("*")namespace',
                                              "variable missing required Items object",
                                              "variable should not contain lock definition"]),
    ],
)  # fmt: skip
def test_a_write_lists_every_problem(
    namespace: str, items: dict[str, str] | None, lock: LockRequest | None, problems: list[str]
) -> None:
    assert set_problems(namespace, "app/x", items, lock) == problems


@pytest.mark.parametrize(
    ("lock", "ttl", "delay", "problems"),
    [
        (None, DEFAULT_LOCK_TTL, DEFAULT_LOCK_DELAY, []),
        (LockRequest(ttl="30s", lock_delay="1s"), 30 * SECOND, SECOND, []),
        (LockRequest(ttl=20 * SECOND), 20 * SECOND, DEFAULT_LOCK_DELAY, []),
        (LockRequest(ttl="5s"), 5 * SECOND, DEFAULT_LOCK_DELAY, ["TTL must be between 10 seconds and 24 hours"]),
        (LockRequest(ttl="25h"), 25 * 3600 * SECOND, DEFAULT_LOCK_DELAY, ["TTL must be between 10 seconds and 24 hours"]),
        (LockRequest(ttl="-20s"), -20 * SECOND, DEFAULT_LOCK_DELAY, ["Lock TTL and LockDelay must not be negative"]),
        (LockRequest(ttl="soon"), DEFAULT_LOCK_TTL, DEFAULT_LOCK_DELAY, ["Lock.TTL: invalid duration 'soon'"]),
    ],
)  # fmt: skip
def test_lock_settings_take_nomads_defaults_and_bounds(
    lock: LockRequest | None, ttl: int, delay: int, problems: list[str]
) -> None:
    assert lock_settings("default", "locks/a", None, lock) == (ttl, delay, problems)


@pytest.mark.parametrize(
    ("now", "live", "delayed"),
    [(0, True, False), (99, True, False), (100, False, True), (129, False, True), (130, False, False)],
)
def test_a_lock_lapses_at_its_expiry_and_is_kept_for_its_delay(now: int, live: bool, delayed: bool) -> None:
    lock = VariableLock(id="l", ttl=100, lock_delay=30, expires_at=100)
    assert (lock.live(now), lock.delayed(now)) == (live, delayed)
