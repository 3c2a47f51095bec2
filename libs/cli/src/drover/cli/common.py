"""What every verb shares: Nomad's flags (`-address`, `-namespace`, `-json`, ...) spelt with one
dash as Nomad users type them and with two as is usual, the exit codes, readable errors instead
of tracebacks, and the lookup of an object by a unique prefix of its ID."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console

from drover.cli.api import DEFAULT_ADDRESS, ApiError, Client

EXIT_OK = 0
EXIT_ERROR = 1  # the API refused, could not be reached, or the input is wrong
EXIT_PLACEMENT = 2  # `job run`: submitted, but allocs could not be placed (as Nomad's)
EXIT_PLAN_ERROR = 255  # `job plan`: it could not be planned (0 no change, 1 allocs change)

P = ParamSpec("P")
R = TypeVar("R")


def opt(name: str, help: str, **kw: Any) -> Any:
    """An option spelt as Nomad's (-name) and as is usual (--name)."""
    return typer.Option(f"-{name}", f"--{name}", help=help, **kw)


Address = Annotated[
    str, opt("address", "The API's address.", envvar=["DROVER_ADDR", "NOMAD_ADDR"], show_default=True)
]
Namespace = Annotated[str, opt("namespace", "The namespace.", envvar=["DROVER_NAMESPACE", "NOMAD_NAMESPACE"])]
Json = Annotated[bool, opt("json", "Print the API's JSON.")]
Verbose = Annotated[bool, opt("verbose", "Full IDs and more detail.")]
Detach = Annotated[bool, opt("detach", "Return at once: don't monitor what it started.")]
Filter = Annotated[
    str,
    opt(
        "filter",
        "A filter expression (Nomad's go-bexpr syntax, e.g. 'Meta.owner == \"ops\"') the list must pass.",
    ),
]


def filtered(expression: str) -> dict[str, str]:
    """A list read's ?filter= (none when no -filter was given)."""
    return {"filter": expression} if expression else {}


# The defaults, for the signatures.
ADDRESS = DEFAULT_ADDRESS
NAMESPACE = "default"
# The namespace that lists every one's (Nomad's `-namespace '*'`).
ALL_NAMESPACES = "*"

out = Console(highlight=False, soft_wrap=True, emoji=False)


def echo(text: str = "") -> None:
    """Print text as is (no markup, no wrapping)."""
    out.print(text, markup=False)


def error(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True, emoji=False).print(
        f"Error: {message}", markup=False
    )


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """Print the error and exit with `code`."""
    error(message)
    raise typer.Exit(code)


class Problem(Exception):
    """What a verb cannot do as asked (a bad argument, an ambiguous prefix, ...)."""


def verb(code: int = EXIT_ERROR) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A verb whose failures print `Error: ...` and exit `code`, never a traceback: the API's
    refusals with its message, an unreachable API with its address, Ctrl-C quietly (130)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except (ApiError, Problem) as e:
                fail(str(e), code)
            except KeyboardInterrupt:
                raise typer.Exit(130) from None
            except (typer.Exit, typer.Abort, SystemExit):
                raise
            except Exception as e:  # a bug of ours: still no traceback for the user
                fail(f"{type(e).__name__}: {e}", code)

        return run

    return wrap


@contextmanager
def client(address: str, namespace: str = NAMESPACE) -> Iterator[Client]:
    c = Client(address, namespace)
    try:
        yield c
    finally:
        c.close()


# What each kind is called in messages, and the list read to find it by prefix.
_LISTS = {
    "job": "/v1/jobs",
    "allocation": "/v1/allocations",
    "evaluation": "/v1/evaluations",
    "node": "/v1/nodes",
    "deployment": "/v1/deployments",
}


def matches(c: Client, kind: str, prefix: str) -> list[dict[str, Any]]:
    """The objects of `kind` whose ID starts with `prefix`; only the one whose ID is `prefix`
    when there is one (a job "web" beside "web-2"). Asked in every namespace (`*`), the one
    found is then read in its own, as Nomad's CLI does."""
    found = list(c.get(_LISTS[kind], prefix=prefix))
    exact = [o for o in found if o["ID"] == prefix] or found
    if c.namespace == ALL_NAMESPACES and len(exact) == 1 and exact[0].get("Namespace"):
        c.namespace = exact[0]["Namespace"]
    return exact


def resolve(c: Client, kind: str, prefix: str) -> dict[str, Any]:
    """The one object of `kind` that `prefix` names (its stub from the list), or Problem."""
    found = matches(c, kind, prefix)
    if not found:
        raise ApiError(404, f'No {kind} with prefix or ID "{prefix}" found')
    if len(found) > 1:
        ids = "\n".join(o["ID"] for o in found)
        raise Problem(f'Prefix "{prefix}" matched multiple {kind}s:\n{ids}')
    return found[0]


def confirm(question: str, yes: bool) -> None:
    """Ask before doing what can't be undone unless -yes; on a non-terminal, refuse to guess."""
    if yes:
        return
    if not out.is_terminal:
        raise Problem(f"{question} Pass -yes to confirm (stdin is not a terminal)")
    if not typer.confirm(question, default=False):
        raise typer.Exit(EXIT_ERROR)


def diff_text(diff: dict[str, Any], verbose: bool = False) -> str:
    """A job diff as Nomad prints it (+ / -)."""
    from drover.cli.diffview import format_diff

    return format_diff(diff, verbose=verbose)
