"""Variables: a projection of Nomad Variables by namespace and path, their items sealed
(drover.model.variables.VariableEncrypted), written by the reducer like the others.

Revision ID: vars_0010
Revises: 0009
"""

from alembic import op

revision = "vars_0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE variables ("
        "namespace text NOT NULL, path text NOT NULL, doc jsonb NOT NULL, modify_index bigint NOT NULL, "
        "PRIMARY KEY (namespace, path))"
    )


def downgrade() -> None:
    op.execute("DROP TABLE variables")
