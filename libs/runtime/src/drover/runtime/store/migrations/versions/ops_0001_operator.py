"""What an operator sets for the cluster: the scheduler configuration (one row, once set; until
then Nomad's default holds) and the node pools (the built-in `all` and `default` are never
rows), projections the reducer writes like the others.

Revision ID: ops_0001
Revises: svc_0001
"""

from alembic import op

revision = "ops_0001"
down_revision = "nid_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE scheduler_config (id text PRIMARY KEY, doc jsonb NOT NULL, modify_index bigint NOT NULL)"
    )
    op.execute(
        "CREATE TABLE node_pools (name text PRIMARY KEY, doc jsonb NOT NULL, modify_index bigint NOT NULL)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE node_pools")
    op.execute("DROP TABLE scheduler_config")
