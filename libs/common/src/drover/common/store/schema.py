"""Table definitions (SQLAlchemy Core). Migrations under `migrations/` create them; this module
is what the code queries."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, MetaData, Table, Text
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP

metadata = MetaData()

# The append-only log. `position` is the cluster index; (stream, version) gives optimistic
# concurrency per aggregate.
events = Table(
    "events",
    metadata,
    Column("position", BigInteger, primary_key=True),
    Column("stream", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", Text, nullable=False),
    Column("data", JSONB, nullable=False),
    Column("metadata", JSONB, nullable=False),
    Column("recorded_at", TIMESTAMP(timezone=True), nullable=False),
)

# Projections: current state documents in Nomad's JSON form, written by the reducer in the
# same transaction as the events.
nodes = Table(
    "nodes",
    metadata,
    Column("id", Text, primary_key=True),
    Column("doc", JSONB, nullable=False),
    Column("modify_index", BigInteger, nullable=False),
)
jobs = Table(
    "jobs",
    metadata,
    Column("namespace", Text, primary_key=True),
    Column("id", Text, primary_key=True),
    Column("doc", JSONB, nullable=False),
    Column("modify_index", BigInteger, nullable=False),
)
job_versions = Table(
    "job_versions",
    metadata,
    Column("namespace", Text, primary_key=True),
    Column("id", Text, primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("doc", JSONB, nullable=False),
)
allocs = Table(
    "allocs",
    metadata,
    Column("id", Text, primary_key=True),
    Column("namespace", Text, nullable=False),
    Column("job_id", Text, nullable=False),
    Column("node_id", Text, nullable=False),
    Column("eval_id", Text, nullable=False),
    Column("doc", JSONB, nullable=False),
    Column("modify_index", BigInteger, nullable=False),
)
evals = Table(
    "evals",
    metadata,
    Column("id", Text, primary_key=True),
    Column("namespace", Text, nullable=False),
    Column("job_id", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("doc", JSONB, nullable=False),
    Column("modify_index", BigInteger, nullable=False),
)
deployments = Table(
    "deployments",
    metadata,
    Column("id", Text, primary_key=True),
    Column("namespace", Text, nullable=False),
    Column("job_id", Text, nullable=False),
    Column("create_index", BigInteger, nullable=False),
    Column("doc", JSONB, nullable=False),
    Column("modify_index", BigInteger, nullable=False),
)
# Leader leases for singletons (plan applier, watchers): the epoch fences a deposed leader.
leases = Table(
    "leases",
    metadata,
    Column("name", Text, primary_key=True),
    Column("epoch", BigInteger, nullable=False),
    Column("holder", Text, nullable=False),
)
PROJECTION_TABLES = ("nodes", "jobs", "job_versions", "allocs", "evals", "deployments")
