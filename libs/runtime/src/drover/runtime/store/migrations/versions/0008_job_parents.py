"""Job summaries without reading documents: a job's children (dispatched or periodic launches)
found by their ParentID through an index, and each alloc's task group a column, as its client
status is (0002), so a summary counts allocs by group and status from the columns alone (the
alloc documents are text, parsed only when read whole).

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX jobs_parent ON jobs (namespace, (doc->>'ParentID'))")
    op.execute("ALTER TABLE allocs ADD COLUMN task_group text NOT NULL DEFAULT ''")
    op.execute("UPDATE allocs SET task_group = CAST(doc AS json)->>'TaskGroup'")
    op.execute("ALTER TABLE allocs ALTER COLUMN task_group DROP DEFAULT")


def downgrade() -> None:
    op.execute("ALTER TABLE allocs DROP COLUMN task_group")
    op.execute("DROP INDEX jobs_parent")
