"""Make the alloc rows a plan COPYs under the events lock cheaper to write.

Every append holds the events table lock for its whole transaction, and a 1,000-alloc plan's
COPY into `allocs` is the largest part of that hold. Two costs it paid for nothing:

- The `allocs_eval` index: its only reader, an eval's allocations, now filters the eval's job's
  allocs (the `allocs_job` index) by eval ID instead.
- `json` validation of every document: the documents are written by the services' own
  serializer and read back whole, so the column is `text`; the one read that filters on a
  document member (a deployment's allocs, within one job) casts it.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS allocs_eval")
    op.execute("ALTER TABLE allocs ALTER COLUMN doc TYPE text USING doc::text")


def downgrade() -> None:
    op.execute("ALTER TABLE allocs ALTER COLUMN doc TYPE json USING doc::json")
    op.execute("CREATE INDEX allocs_eval ON allocs (eval_id)")
