"""A plan's allocs in columns: how a `PlanApplied` of many allocs is stored and relayed.

The allocs of one plan are nearly all alike (same job, group, eval, resources, status): only
their IDs, names and nodes differ, and their placement metrics. Stored as a list, every replica
parses and builds every member of every alloc (half the cost of following the log, which six
processes do). In columns, the members they share are written once (`Template`), those that
differ as one list per member (`Columns`). The log keeps their metrics beside the event
(`metrics_object`; logs from before hold them here, in `Metrics`, one JSON text in a string that
replicas skip unparsed). A replica builds each alloc as a copy of the decoded template with its own column values put in: under half the decode time of the list form, and
about half its bytes (`bench/codec.py` measures both forms). Plans of fewer than
`COLUMNS_FROM` allocs keep the list form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter

from drover.model.alloc import HELD_BY_CLASS, Allocation, AllocMetric, ReplicaAllocation
from drover.model.base import NomadModel, unvalidated

# Allocs in a plan from which they are stored in columns; below it the list form is as small.
COLUMNS_FROM = 16

_FIELDS = {name: info for name, info in Allocation.model_fields.items() if name != "metrics"}
_ALIAS = {name: info.alias or name for name, info in _FIELDS.items()}
_NAME = {alias: name for name, alias in _ALIAS.items()}
# Members whose JSON value is the Python value: a replica takes it without validation.
_PLAIN = {name for name, info in _FIELDS.items() if info.annotation in (str, int, bool)}
_COLUMN: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(list[info.annotation])  # type: ignore[name-defined]
    for name, info in _FIELDS.items()
}
_METRICS: TypeAdapter[list[AllocMetric | None]] = TypeAdapter(list[AllocMetric | None])


def _member(a: Allocation, name: str) -> Any:
    """`a`'s member `name`, a lean replica alloc's held by its class too (drover.model.alloc)."""
    members = a.__dict__
    return members[name] if name in members else HELD_BY_CLASS[name]


def _varies(allocs: Sequence[Allocation], name: str) -> bool:
    if name in HELD_BY_CLASS:
        first = _member(allocs[0], name)
        return any(_member(a, name) != first for a in allocs)
    first = allocs[0].__dict__[name]
    if isinstance(first, BaseModel):
        # Equal models are compared by their members: pydantic's __eq__ costs several times
        # as much, and most allocs hold a model of their own for an empty transition.
        kind, members = type(first), first.__dict__
        for a in allocs:
            v = a.__dict__[name]
            if v is not first and (type(v) is not kind or v.__dict__ != members):
                return True
        return False
    for a in allocs:
        v = a.__dict__[name]
        if v is not first and v != first:
            return True
    return False


def metric_json(metric: AllocMetric) -> str:
    """One alloc's metrics as JSON: the form `MetricsJSON` holds (defaults left out)."""
    return metric.model_dump_json(by_alias=True, exclude_defaults=True)


def with_metrics(allocs: Sequence[Allocation], metrics_json: Mapping[str, str]) -> list[Allocation]:
    """`allocs` with the metrics `metrics_json` holds for them decoded in (copies where so)."""
    return [
        a.model_copy(update={"metrics": AllocMetric.model_validate_json(metrics_json[a.id])})
        if a.metrics is None and a.id in metrics_json
        else a
        for a in allocs
    ]


def metrics_object(allocs: Sequence[Allocation], metrics_json: Mapping[str, str] | None = None) -> str | None:
    """The metrics of `allocs` as one JSON object by alloc ID (None if none has any): what the
    log stores beside a plan's event. Texts in `metrics_json` are taken as they are."""
    parts = []
    for a in allocs:
        text = metrics_json.get(a.id) if metrics_json and a.metrics is None else None
        if text is None and a.metrics is not None:
            text = metric_json(a.metrics)
        if text is not None:
            parts.append(json.dumps(a.id) + ":" + text)
    return "{" + ",".join(parts) + "}" if parts else None


_METRICS_BY_ID: TypeAdapter[dict[str, AllocMetric]] = TypeAdapter(dict[str, AllocMetric])


def attach_metrics(allocs: Sequence[Allocation], text: str) -> None:
    """Put the metrics of a `metrics_object` text into freshly decoded `allocs`, in place (the
    caller owns them: nothing else holds them yet)."""
    by_id = _METRICS_BY_ID.validate_json(text)
    for a in allocs:
        m = by_id.get(a.id)
        if m is not None:
            a.metrics = m


def encode_placements(
    allocs: Sequence[Allocation],
    *,
    metrics: bool = True,
    metrics_text: bool = True,
    metrics_json: Mapping[str, str] | None = None,
    metrics_each: bool = False,
) -> str:
    """`allocs` (at least one) as the JSON object stored under a PlanApplied's `Placements`.
    `metrics`: False leaves them out (the log stores them apart, see `metrics_object`).
    `metrics_text`: the metrics as one JSON text in a string, for readers that skip them.
    `metrics_json`: metrics already in JSON, by alloc ID, for allocs whose `metrics` are not
    decoded (see `Placements.metrics_json`). `metrics_each`: each alloc's metrics as a JSON
    text of its own (`MetricsJSON`), for a reader that passes them on without decoding them."""
    varying = [name for name in _FIELDS if _varies(allocs, name)]
    template = allocs[0].model_dump_json(by_alias=True, exclude_defaults=True, exclude={"metrics", *varying})
    columns = ",".join(
        f'"{_ALIAS[name]}":'
        + _COLUMN[name]
        .dump_json([_member(a, name) for a in allocs], by_alias=True, exclude_defaults=True)
        .decode()
        for name in varying
    )
    out = f'{{"Template":{template},"Columns":{{{columns}}}'
    if not metrics:
        return out + "}"
    if metrics_each:
        each = [metric_json(a.metrics) if a.metrics is not None else None for a in allocs]
        if any(m is not None for m in each):
            out += ',"MetricsJSON":' + json.dumps(each)
        return out + "}"
    texts = _metric_texts(allocs, metrics_json) if metrics_json else None
    if texts is not None:
        text = "[" + ",".join(texts) + "]"
    else:
        each_metrics = [a.metrics for a in allocs]
        if not any(m is not None for m in each_metrics):
            return out + "}"
        text = _METRICS.dump_json(each_metrics, by_alias=True, exclude_defaults=True).decode()
    # In a string, a replica skips them without parsing what it holds (skipping them as JSON
    # took a third of its decode time).
    return out + ',"Metrics":' + (json.dumps(text) if metrics_text else text) + "}"


def _metric_texts(allocs: Sequence[Allocation], metrics_json: Mapping[str, str]) -> list[str] | None:
    """Each alloc's metrics as JSON: its text in `metrics_json`, else its own (None if no
    alloc has a text there)."""
    texts: list[str] = []
    found = False
    for a in allocs:
        text = metrics_json.get(a.id) if a.metrics is None else None
        if text is not None:
            found = True
            texts.append(text)
        else:
            texts.append(metric_json(a.metrics) if a.metrics is not None else "null")
    return texts if found else None


def _named(columns: dict[str, list[Any]], metrics: list[Any] | None) -> list[tuple[str, list[Any]]]:
    """The columns by field name, each value of its field's type (unknown members dropped)."""
    named: list[tuple[str, list[Any]]] = []
    for alias, values in columns.items():
        name = _NAME.get(alias)
        if name is None:
            continue
        if name not in _PLAIN:
            values = _COLUMN[name].validate_python(values)
        named.append((name, values))
    if metrics is not None:
        named.append(("metrics", metrics))
    return named


def _build(
    cls: type[Allocation], template: Allocation, named: list[tuple[str, list[Any]]]
) -> list[Allocation]:
    """Every alloc: the template's members with the alloc's own column values put in. The
    members not in a column are the template's own objects, shared as a replica shares equal
    parts anyway (allocs are only ever changed by copy, see InMemoryState)."""
    shared = template.__dict__
    docs = [shared.copy() for _ in range(len(named[0][1]) if named else 1)]
    for name, values in named:
        for doc, v in zip(docs, values, strict=True):
            doc[name] = v
    fields_set = template.__pydantic_fields_set__
    return [unvalidated(cls, doc, set(fields_set)) for doc in docs]


class Placements(NomadModel):
    """A plan's allocs in columns, as stored (see the module's docstring)."""

    template: Allocation = Field(default_factory=Allocation)
    columns: dict[str, list[Any]] = Field(default_factory=dict)
    # One per alloc (or null), as JSON text or as a list (see encode_placements).
    metrics: list[AllocMetric | None] | str | None = Field(default=None, union_mode="left_to_right")
    # Or each alloc's as a JSON text of its own (a plan request: the plan applier writes them
    # to the log and the projections as they are, never decoding them).
    metrics_json: list[str | None] | None = Field(default=None, alias="MetricsJSON")

    def allocs(self) -> list[Allocation]:
        """The allocs (without their metrics where those are in `metrics_json`)."""
        metrics = _METRICS.validate_json(self.metrics) if isinstance(self.metrics, str) else self.metrics
        return _build(Allocation, self.template, _named(self.columns, metrics))

    def metrics_by_id(self, allocs: Sequence[Allocation]) -> dict[str, str]:
        """`metrics_json` by alloc ID, for `allocs` (as `allocs()` built them)."""
        if not self.metrics_json:
            return {}
        return {a.id: m for a, m in zip(allocs, self.metrics_json, strict=True) if m is not None}


class ReplicaPlacements(NomadModel):
    """The same as a replica reads it: the metrics are not declared, so they are skipped. A
    replica's state builds these allocs itself (`InMemoryState.place_columns`)."""

    template: ReplicaAllocation = Field(default_factory=ReplicaAllocation)
    columns: dict[str, list[Any]] = Field(default_factory=dict)

    def named_columns(self) -> list[tuple[str, list[Any]]]:
        """The columns by field name, each value of its field's type."""
        return _named(self.columns, None)

    def allocs(self, columns: list[tuple[str, list[Any]]] | None = None) -> list[Allocation]:
        """The allocs; `columns`: `named_columns()` if the caller has them already."""
        return _build(ReplicaAllocation, self.template, self.named_columns() if columns is None else columns)
