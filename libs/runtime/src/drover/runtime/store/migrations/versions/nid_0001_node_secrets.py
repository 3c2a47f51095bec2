"""Node identity: the keyed hash of each node's SecretID (NodeRegistered.secret_hash), a
column of its projection row that node reads leave out; what a client's requests are checked
against (drover.api.nodeauth).

Revision ID: nid_0001
Revises: svc_0001
"""

from alembic import op

revision = "nid_0001"
down_revision = "acl_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE nodes ADD COLUMN secret_hash text")
    # A request naming no node (following the allocs of many) is checked by its secret alone.
    op.execute("CREATE INDEX nodes_secret_hash ON nodes (secret_hash)")


def downgrade() -> None:
    op.execute("ALTER TABLE nodes DROP COLUMN secret_hash")
