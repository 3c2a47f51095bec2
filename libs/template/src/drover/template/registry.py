"""A function a template can call, with Go's parameter types (a constant argument takes its
parameter's type; a value of another type is an error, as Go's reflection would find), and the
registry of them that a caller can extend."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# Parameter kinds, named as Go's errors name them.
STRING = "string"
INT = "int"
FLOAT = "float64"
BOOL = "bool"
ANY = "interface {}"
STRINGS = "[]string"
LIST = "[]interface {}"
MAP = "map[string]interface {}"


@dataclass(frozen=True)
class Function:
    """``call`` takes the arguments of ``params`` (then any number of ``variadic`` ones); with
    ``needs_call`` it takes the render's Call (its data hooks and what it read) first."""

    call: Callable[..., Any]
    params: tuple[str, ...] = ()
    variadic: str | None = None
    needs_call: bool = False


class Registry(Mapping[str, Function]):
    """Functions by name; ``with_functions`` gives a registry extended (or overridden)."""

    def __init__(self, functions: Mapping[str, Function] | None = None) -> None:
        self._functions: dict[str, Function] = dict(functions or {})

    def __getitem__(self, name: str) -> Function:
        return self._functions[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def with_functions(self, extra: Mapping[str, Function]) -> Registry:
        return Registry({**self._functions, **extra})

    def without(self, *names: str) -> Registry:
        return Registry({k: v for k, v in self._functions.items() if k not in names})
