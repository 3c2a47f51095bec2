"""Job restarts: a projection of each job's restarts, written by the reducer like
the others.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE job_restarts ("
        "id text PRIMARY KEY, namespace text NOT NULL, job_id text NOT NULL, status text NOT NULL, "
        "doc jsonb NOT NULL, create_index bigint NOT NULL, modify_index bigint NOT NULL)"
    )
    op.execute("CREATE INDEX job_restarts_job ON job_restarts (namespace, job_id)")


def downgrade() -> None:
    op.execute("DROP TABLE job_restarts")
