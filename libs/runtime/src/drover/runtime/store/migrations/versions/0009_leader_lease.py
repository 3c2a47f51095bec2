"""The leader service's lease is named `leader` (it was `heartbeat-watcher`): the row keeps its
epoch, so the first leader after the upgrade takes the next one, and a process of the code
before, still holding the old name, finds no lease and is fenced.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "UPDATE leases SET name = 'leader' WHERE name = 'heartbeat-watcher' "
        "AND NOT EXISTS (SELECT 1 FROM leases WHERE name = 'leader')"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE leases SET name = 'heartbeat-watcher' WHERE name = 'leader' "
        "AND NOT EXISTS (SELECT 1 FROM leases WHERE name = 'heartbeat-watcher')"
    )
