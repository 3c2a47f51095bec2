"""Why a command refuses: the request is wrong (`Invalid`, every problem listed), names
something that does not exist (`NotFound`), conflicts with a change made meanwhile
(`Conflict`), or comes from a caller that may not make it (`Forbidden`). A refused command returns no events, so nothing is written."""

from __future__ import annotations


class CommandError(Exception):
    """A command refused; `message` says why, in words an operator can act on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(CommandError):
    """The request itself is wrong."""

    @classmethod
    def of(cls, problems: list[str], title: str = "") -> Invalid:
        """Every problem, one per line, under `title` if given."""
        return cls("\n".join([title, *problems] if title else problems))


class NotFound(CommandError):
    """The request names an object that does not exist."""


class Conflict(CommandError):
    """The object changed between the read and the write; reading again and retrying may do."""


class Forbidden(CommandError):
    """The caller may not make this request (Nomad's "Permission denied"), or the cluster
    refuses it as it is configured (Nomad answers 403)."""

    def __init__(self, message: str = "Permission denied") -> None:
        super().__init__(message)
