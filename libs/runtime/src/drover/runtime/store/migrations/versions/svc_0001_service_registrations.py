"""Service registrations (Nomad's native service discovery): a projection of every registered
service instance, by ID, written by the reducer like the others.

Revision ID: svc_0001
Revises: vars_0010
"""

from alembic import op

revision = "svc_0001"
down_revision = "vars_0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE service_registrations ("
        "id text PRIMARY KEY, namespace text NOT NULL, service_name text NOT NULL, "
        "node_id text NOT NULL, job_id text NOT NULL, alloc_id text NOT NULL, doc jsonb NOT NULL, "
        "modify_index bigint NOT NULL)"
    )
    op.execute("CREATE INDEX service_registrations_name ON service_registrations (namespace, service_name)")
    op.execute("CREATE INDEX service_registrations_alloc ON service_registrations (alloc_id)")
    op.execute("CREATE INDEX service_registrations_node ON service_registrations (node_id)")


def downgrade() -> None:
    op.execute("DROP TABLE service_registrations")
