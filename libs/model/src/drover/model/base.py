"""Base model: Nomad's JSON shape (PascalCase names, nulls meaning "use the default")."""

from __future__ import annotations

import json
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)
N = TypeVar("N", bound="NomadModel")

# Words Nomad spells in capitals inside its PascalCase field names.
_UPPER_WORDS = {
    "id": "ID", "cpu": "CPU", "mb": "MB", "tg": "TG", "ttl": "TTL", "http": "HTTP", "ip": "IP",
    "cidr": "CIDR", "dns": "DNS", "cni": "CNI", "csi": "CSI", "tls": "TLS", "grpc": "GRPC",
    "iops": "IOPS", "numa": "NUMA", "ui": "UI", "url": "URL",
}  # fmt: skip
_SPECIAL = {"ltarget": "LTarget", "rtarget": "RTarget", "mbits": "MBits"}


def pascal(name: str) -> str:
    """``job_id`` -> ``JobID``, ``memory_mb`` -> ``MemoryMB``, ``cpu`` -> ``CPU``."""
    if name in _SPECIAL:
        return _SPECIAL[name]
    return "".join(_UPPER_WORDS.get(part, part[:1].upper() + part[1:]) for part in name.split("_"))


def strip_nulls(data: Any) -> Any:
    """`data` with every null object member removed, at any depth."""
    if isinstance(data, dict):
        return {k: strip_nulls(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [strip_nulls(v) for v in data]
    return data


class NomadModel(BaseModel):
    """Every domain object: reads and writes Nomad's JSON field names; null means default."""

    model_config = ConfigDict(
        alias_generator=pascal,
        populate_by_name=True,
        extra="ignore",
        validate_assignment=False,
    )

    # `nomad job run -output` emits null for every unset block; null takes the field's default.
    # Nulls are stripped from outside input once, up front, rather than by a validator on every
    # model: our own documents never hold an invalid null, and decoding them is the hot path.
    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        return super().model_validate(strip_nulls(obj), *args, **kwargs)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, *args: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate_json(json_data, *args, **kwargs)
        except ValidationError:
            return super().model_validate(strip_nulls(json.loads(json_data)), *args, **kwargs)

    def to_api(self) -> dict[str, Any]:
        """The object as Nomad's API returns it."""
        return self.model_dump(by_alias=True, mode="json")


def copy_with(template: M, changes: dict[str, Any]) -> M:
    """A copy of `template` with `changes` (field names to values already of the fields'
    types) put in, unvalidated. The scheduler builds every placement this way from one
    validated alloc per group: the model's constructor validates every member and builds every
    default (8 us an alloc, against under 3). The copy shares the template's other members;
    allocs and their parts are never changed in place (see InMemoryState), only replaced."""
    members = template.__dict__.copy()
    members.update(changes)
    return unvalidated(type(template), members, template.__pydantic_fields_set__ | changes.keys())


def unvalidated(cls: type[M], members: dict[str, Any], fields_set: set[str]) -> M:
    """A `cls` holding `members` (every field, each already of its type) as they are: what
    `copy_with` and the column decoder (drover.model.placements) build allocs with."""
    out = cls.__new__(cls)
    object.__setattr__(out, "__dict__", members)
    object.__setattr__(out, "__pydantic_fields_set__", fields_set)
    object.__setattr__(out, "__pydantic_extra__", None)
    object.__setattr__(out, "__pydantic_private__", None)
    return out


def overlay(base: N, *layers: N | None) -> N:
    """A copy of ``base`` with each layer's explicitly set fields on top (later layers win).

    Only ``model_fields_set`` counts, so a field the user left out or sent as null never
    overrides the layer below it.
    """
    update: dict[str, Any] = {}
    for layer in layers:
        if layer is not None:
            update.update({name: getattr(layer, name) for name in layer.model_fields_set})
    return base.model_copy(update=update, deep=True)
