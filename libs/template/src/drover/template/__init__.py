"""Drover's template language: Go's text/template with consul-template's functions, as Nomad's
``template`` blocks render. Pure: no I/O and no clock; what a render reads from outside (the
task's environment, files, the time, Nomad's services and variables) comes through a
``Call`` the caller hands in, and the render tells what it read.

    tmpl = parse(text, name="local/app.conf")             # ParseError, worded as Go's
    out = tmpl.render(Call(env=..., nomad=...))          # ExecError, with line and column
    out.text, out.used, out.missing                      # missing: not to be written yet
    check(text, "{{", "}}", known_functions())           # every problem, each with its line

Supported, as Go: text and actions with trim markers (``{{-`` / ``-}}``), comments, custom
delimiters; pipelines, parenthesised pipelines, variables (``:=``, ``=``, ``$``), fields and
chained fields on maps, structs and method results, map keys; ``if``/``else if``/``else``,
``range`` over lists, maps (sorted keys) and ints with ``else``, ``break`` and ``continue``,
``with``/``else with``/``else``, ``define``/``template``/``block``; Go's truth, Go's printing
(``<no value>`` for a missing key, Go's float forms), ``missingkey=error`` (Nomad's
``error_on_missing_key``); the builtins and, or (short-circuit), not, len, index, slice, eq, ne,
lt, le, gt, ge (Go's comparison errors), print, printf, println (fmt's verbs), html, js,
urlquery, call. Numbers keep Go's kinds: an int stays an int, JSON numbers are float64.
Unknown functions and undeclared variables are parse errors.

consul-template's functions: env, mustEnv, envOrDefault, file (a callback), timestamp (the
Call's time, Go layouts), the JSON, parse*, string, regex, base64, hash, math (its argument
order: ``subtract 2 5`` is 3), collection (contains*, in, byKey, byTag, explode, explodeMap,
loop, indent, splitToMap) and scratch functions; ``sprig_*`` (a common subset); Nomad's
nomadService (with the rendezvous ``count key name`` form, chosen here as Nomad's server
does), nomadServices, nomadVar (its items and their Keys/Values/Tuples/Metadata/Parent
methods), nomadVarExists, nomadVarList and nomadVarListSafe through ``NomadData``.

Differences: Consul's and Vault's functions (key, service, secret, ...) parse but have no
data: a render that calls one lists it as missing, and the template is never written (as
Nomad's without Consul). Not offered (a parse error): plugin and writeToFile (Nomad denies
them by default), sockaddr, executeTemplate, parseYAML, toYAML, toTOML, mergeMap*, byMeta,
byPort, spew_*. Complex numbers, unsigned ints, channels and Go iterators have no Python
counterpart; a list of strings passes where Go wants []string whatever its origin; templates
nest at most 100 deep (Go: 100000)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drover.template.builtins import BUILTINS
from drover.template.context import (
    Call,
    Dependency,
    NomadData,
    ServiceEntry,
    ServiceStub,
    Variable,
    VarItem,
    VarItems,
    VarMeta,
)
from drover.template.errors import ExecError, ParseError, TemplateError
from drover.template.evaluator import Executor
from drover.template.functions import HELPERS
from drover.template.functions_nomad import NOMAD, UNAVAILABLE, choose
from drover.template.parser import Tree, parse_trees
from drover.template.registry import Function, Registry
from drover.template.sprig import SPRIG_FUNCTIONS

__all__ = [
    "Call",
    "Dependency",
    "ExecError",
    "Function",
    "NomadData",
    "ParseError",
    "Registry",
    "Rendered",
    "ServiceEntry",
    "ServiceStub",
    "Template",
    "TemplateError",
    "VarItem",
    "VarItems",
    "VarMeta",
    "Variable",
    "check",
    "choose",
    "default_functions",
    "known_functions",
    "parse",
    "render",
]


def default_functions() -> Registry:
    """Go's builtins, consul-template's helpers, sprig_*, Nomad's and Consul's/Vault's."""
    return Registry({**BUILTINS, **HELPERS, **SPRIG_FUNCTIONS, **NOMAD, **UNAVAILABLE})


def known_functions() -> frozenset[str]:
    return frozenset(default_functions())


@dataclass(frozen=True)
class Rendered:
    text: str
    used: list[Dependency]
    missing: list[Dependency]


class Template:
    """A parsed template: its trees (the main one and every ``define``/``block``)."""

    def __init__(self, name: str, text: str, trees: dict[str, Tree], functions: Registry) -> None:
        self.name = name
        self.text = text
        self.trees = trees
        self.functions = functions

    def render(self, call: Call | None = None, data: Any = None, missing_key_error: bool = False) -> Rendered:
        call = call if call is not None else Call()
        executor = Executor(self.name, self.text, self.trees, dict(self.functions), call, missing_key_error)
        text = executor.execute(data)
        return Rendered(text, list(call.used), list(call.missing))


def parse(
    text: str,
    name: str = "",
    left_delim: str = "",
    right_delim: str = "",
    functions: Registry | None = None,
) -> Template:
    functions = functions if functions is not None else default_functions()
    trees = parse_trees(name, text, left_delim or "{{", right_delim or "}}", functions.__contains__)
    return Template(name, text, trees, functions)


def render(
    text: str,
    call: Call | None = None,
    name: str = "",
    left_delim: str = "",
    right_delim: str = "",
    data: Any = None,
    missing_key_error: bool = False,
    functions: Registry | None = None,
) -> Rendered:
    return parse(text, name, left_delim, right_delim, functions).render(call, data, missing_key_error)


def check(
    text: str,
    left_delim: str = "",
    right_delim: str = "",
    known: frozenset[str] | None = None,
    name: str = "",
) -> list[str]:
    """Every problem parsing finds: each unknown function, then the first syntax error (Go's
    parser stops there), each worded as Go's with its line."""
    problems: list[str] = []
    names = known if known is not None else known_functions()
    try:
        parse_trees(
            name,
            text,
            left_delim or "{{",
            right_delim or "}}",
            names.__contains__,
            lambda e: problems.append(str(e)),
        )
    except ParseError as e:
        problems.append(str(e))
    return problems
