"""Scaling events: a projection of each job's scale requests by task group (Nomad's
JobScalingEvents), written by the reducer like the others.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE scaling_events ("
        "namespace text NOT NULL, job_id text NOT NULL, doc jsonb NOT NULL, modify_index bigint NOT NULL, "
        "PRIMARY KEY (namespace, job_id))"
    )


def downgrade() -> None:
    op.execute("DROP TABLE scaling_events")
