"""Node pools (Nomad 1.6's): named sets of nodes a job is placed within. `all` and `default`
are built in - always there, never changed or deleted (they are constants here, never stored);
any other pool is created by an operator, or by the first node that registers into it. A pool
may override the cluster's scheduler algorithm and memory oversubscription (Nomad
Enterprise's node pool SchedulerConfiguration). Rules and words: nomad/structs/node_pool.go."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import field_validator

from drover.model.base import NomadModel
from drover.model.defaults import DEFAULT_NODE_POOL
from drover.model.durations import HOUR, parse_duration
from drover.model.schedulerconfig import SchedulerConfiguration, algorithm_problems

NODE_POOL_ALL = "all"
NODE_POOL_DEFAULT = DEFAULT_NODE_POOL
DEFAULT_NODE_IDENTITY_TTL = 24 * HOUR
MAX_DESCRIPTION_LENGTH = 256
_VALID_NAME = re.compile(r"^[a-zA-Z0-9-_]{1,128}$")


class NodePoolSchedulerConfiguration(NomadModel):
    """What a pool overrides of the cluster's scheduler configuration: unset, the cluster's."""

    scheduler_algorithm: str = ""
    memory_oversubscription_enabled: bool | None = None


class NodePool(NomadModel):
    name: str = ""
    description: str = ""
    meta: dict[str, str] | None = None
    scheduler_configuration: NodePoolSchedulerConfiguration | None = None
    # Nanoseconds; Nomad's JSON also takes a duration string ("12h").
    node_identity_ttl: int = DEFAULT_NODE_IDENTITY_TTL
    create_index: int = 0
    modify_index: int = 0

    @field_validator("node_identity_ttl", mode="before")
    @classmethod
    def _ttl(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return parse_duration(value) if value else DEFAULT_NODE_IDENTITY_TTL
            except ValueError as e:
                raise ValueError(f"NodeIdentityTTL: {e}") from None
        return value

    def is_builtin(self) -> bool:
        return self.name in BUILTIN_NODE_POOLS

    def same_spec(self, other: NodePool) -> bool:
        """Whether the two are the same pool as an operator wrote it (their indexes aside)."""
        keep = {"create_index", "modify_index"}
        return self.model_dump(exclude=keep) == other.model_dump(exclude=keep)


BUILTIN_NODE_POOLS = {
    NODE_POOL_ALL: NodePool(
        name=NODE_POOL_ALL,
        description="Node pool with all nodes in the cluster.",
        create_index=1,
        modify_index=1,
    ),
    NODE_POOL_DEFAULT: NodePool(
        name=NODE_POOL_DEFAULT, description="Default node pool.", create_index=1, modify_index=1
    ),
}


def builtin_pool(name: str) -> NodePool | None:
    return BUILTIN_NODE_POOLS.get(name)


def name_problems(name: str) -> list[str]:
    if _VALID_NAME.match(name):
        return []
    return [f"invalid name {json.dumps(name)}, must match regex {_VALID_NAME.pattern}"]


def pool_problems(pool: NodePool) -> list[str]:
    """Every problem with a pool an operator writes (Nomad's NodePool.Validate)."""
    out = name_problems(pool.name)
    if len(pool.description) > MAX_DESCRIPTION_LENGTH:
        out.append(f"description longer than {MAX_DESCRIPTION_LENGTH}")
    if pool.node_identity_ttl < 0:
        out.append("NodeIdentityTTL must not be negative")
    sc = pool.scheduler_configuration
    if sc is not None:
        out += algorithm_problems(sc.scheduler_algorithm, "SchedulerConfiguration.SchedulerAlgorithm")
    return out


def effective_config(config: SchedulerConfiguration, pool: NodePool | None) -> SchedulerConfiguration:
    """The cluster's configuration with the pool's overrides on it (Nomad's WithNodePool)."""
    sc = pool.scheduler_configuration if pool is not None else None
    if sc is None:
        return config
    update: dict[str, object] = {}
    if sc.scheduler_algorithm:
        update["scheduler_algorithm"] = sc.scheduler_algorithm
    if sc.memory_oversubscription_enabled is not None:
        update["memory_oversubscription_enabled"] = sc.memory_oversubscription_enabled
    return config.model_copy(update=update) if update else config
