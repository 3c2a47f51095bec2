"""Let a large append write its event rows before it takes the events lock.

An append holds the events lock from numbering its events until it commits. A large plan's
event rows (hundreds of kB of documents that Postgres validates and compresses) were written
under it. They are now inserted first, at a staging position (negative) and without a version,
and numbered under the lock by an update of those few rows, which keeps their stored documents.
The check keeps every committed event numbered: a row is either staged or has its version.

The lock itself becomes a transaction-level advisory lock: rows inserted before a table lock
would hold the lock mode that the table lock of another such append waits for. The two locks do
not exclude each other, so a writer still taking the table lock must not append beside this
code: every event now records the append protocol it was written under (1 for the rows before,
2 from here), and the column has no default, so such a writer's inserts, which name none, are
refused.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The default fills the rows there are without a rewrite; dropped, so every insert names one.
    op.execute("ALTER TABLE events ADD COLUMN protocol smallint NOT NULL DEFAULT 1")
    op.execute("ALTER TABLE events ALTER COLUMN protocol DROP DEFAULT")
    op.execute("ALTER TABLE events ALTER COLUMN version DROP NOT NULL")
    # NOT VALID: existing rows are not scanned (every one has its version); new ones are checked.
    op.execute(
        "ALTER TABLE events ADD CONSTRAINT events_numbered "
        "CHECK ((position > 0) = (version IS NOT NULL)) NOT VALID"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE events DROP CONSTRAINT events_numbered")
    op.execute("ALTER TABLE events ALTER COLUMN version SET NOT NULL")
    op.execute("ALTER TABLE events DROP COLUMN protocol")
