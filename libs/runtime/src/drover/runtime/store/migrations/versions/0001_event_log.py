"""The event log, its projections and leader leases.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("position", sa.BigInteger, primary_key=True),
        sa.Column("stream", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("data", JSONB, nullable=False),
        sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column(
            "recorded_at", sa.TIMESTAMP(timezone=True), nullable=False, server_default=sa.text("now()")
        ),
        sa.UniqueConstraint("stream", "version", name="events_stream_version"),
    )
    op.create_table(
        "nodes",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("doc", JSONB, nullable=False),
        sa.Column("modify_index", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("namespace", sa.Text, primary_key=True),
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("doc", JSONB, nullable=False),
        sa.Column("modify_index", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "job_versions",
        sa.Column("namespace", sa.Text, primary_key=True),
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("doc", JSONB, nullable=False),
    )
    op.create_table(
        "allocs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("node_id", sa.Text, nullable=False),
        sa.Column("eval_id", sa.Text, nullable=False),
        sa.Column("doc", JSONB, nullable=False),
        sa.Column("modify_index", sa.BigInteger, nullable=False),
    )
    op.create_index("allocs_job", "allocs", ["namespace", "job_id"])
    op.create_index("allocs_node", "allocs", ["node_id"])
    op.create_index("allocs_eval", "allocs", ["eval_id"])
    op.create_table(
        "evals",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("doc", JSONB, nullable=False),
        sa.Column("modify_index", sa.BigInteger, nullable=False),
    )
    op.create_index("evals_job", "evals", ["namespace", "job_id"])
    op.create_table(
        "deployments",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("job_id", sa.Text, nullable=False),
        sa.Column("create_index", sa.BigInteger, nullable=False),
        sa.Column("doc", JSONB, nullable=False),
        sa.Column("modify_index", sa.BigInteger, nullable=False),
    )
    op.create_index("deployments_job", "deployments", ["namespace", "job_id", "create_index"])
    # The log's identity: relayed messages are deduplicated by "<log id>:<position>", so a new
    # log (a wiped database) never collides with an old one inside NATS's duplicate window.
    op.create_table("log_meta", sa.Column("log_id", sa.Text, primary_key=True))
    op.execute("INSERT INTO log_meta (log_id) VALUES (gen_random_uuid()::text)")
    op.create_table(
        "leases",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("holder", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "leases",
        "log_meta",
        "deployments",
        "evals",
        "allocs",
        "job_versions",
        "jobs",
        "nodes",
        "events",
    ):
        op.drop_table(table)
