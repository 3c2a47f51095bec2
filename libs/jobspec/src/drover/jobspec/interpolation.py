"""Runtime interpolations: a reference whose root is not `var`, `local` or an iterator in scope
(`node.unique.name`, `attr.kernel.name`, `meta.rack`, `NOMAD_ALLOC_INDEX`, `env.HOME`) is only
known on the client. As Nomad's parser does, it evaluates to its own text,
``${node.unique.name}``, for the scheduler and the client to fill in."""

from __future__ import annotations

from typing import Any


class RuntimeInterpolation:
    """A reference only the client can resolve, kept as the text it was written as."""

    def __init__(self, path: str) -> None:
        self.path = path

    def then(self, step: str) -> RuntimeInterpolation:
        """The reference one attribute or index further (`step` as written: ``.name``, ``[0]``)."""
        return RuntimeInterpolation(self.path + step)

    def text(self) -> str:
        return "${" + self.path + "}"


def known(value: Any) -> Any:
    """`value` with any runtime interpolation, at any depth, as its text."""
    if isinstance(value, RuntimeInterpolation):
        return value.text()
    if isinstance(value, list):
        return [known(v) for v in value]
    if isinstance(value, dict):
        return {k: known(v) for k, v in value.items()}
    return value
