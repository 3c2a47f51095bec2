"""Namespaces: a projection of the namespace catalogue by name, written by the reducer like
the others. `default` has no row until it is written: reads answer it as Nomad's bootstrap
creates it (drover.model.namespace.builtin), so a fresh log and a rebuild both show it.

Revision ID: ns_0001
Revises: svc_0001
"""

from alembic import op

revision = "ns_0001"
down_revision = "svc_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE namespaces (name text PRIMARY KEY, doc jsonb NOT NULL, modify_index bigint NOT NULL)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE namespaces")
