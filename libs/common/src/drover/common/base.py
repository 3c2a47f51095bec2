"""Base model: Nomad's JSON shape (PascalCase names, nulls meaning "use the default")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

# Words Nomad spells in capitals inside its PascalCase field names.
_UPPER_WORDS = {"id": "ID", "cpu": "CPU", "mb": "MB", "tg": "TG", "ttl": "TTL", "http": "HTTP", "ip": "IP"}
_SPECIAL = {"ltarget": "LTarget", "rtarget": "RTarget", "mbits": "MBits"}


def pascal(name: str) -> str:
    """``job_id`` -> ``JobID``, ``memory_mb`` -> ``MemoryMB``, ``cpu`` -> ``CPU``."""
    if name in _SPECIAL:
        return _SPECIAL[name]
    return "".join(_UPPER_WORDS.get(part, part[:1].upper() + part[1:]) for part in name.split("_"))


class NomadModel(BaseModel):
    """Every domain object: reads and writes Nomad's JSON field names; null means default."""

    model_config = ConfigDict(
        alias_generator=pascal,
        populate_by_name=True,
        extra="ignore",
        validate_assignment=False,
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        # `nomad job run -output` emits null for every unset block; null takes the field's default.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data

    def to_api(self) -> dict[str, Any]:
        """The object as Nomad's API returns it."""
        return self.model_dump(by_alias=True, mode="json")
