"""What the console's lists filter and count on, kept where a scan reads it cheaply: a job's
type, parent, stop flag and whether it launches children as stored generated columns (Postgres
computes them from the document on every write: no reducer change, and a count or a status
filter over every job no longer parses 10,000 documents), and the live allocs and evals of a job
as partial indexes (the status probes of `JOB_STATUS_SQL` answered from an index alone); allocs
by modify_index, so the console's topology reads what changed since its picture, not every alloc;
the allocs desired to run by client status (the overview's counts and failed allocs from an index).

Revision ID: ui_0001
Revises: ops_0001
"""

from alembic import op

revision = "ui_0001"
down_revision = "ops_0001"
branch_labels = None
depends_on = None

LIVE_ALLOC = "NOT (desired_status IN ('stop', 'evict') OR client_status IN ('complete', 'failed', 'lost'))"
LIVE_EVAL = "status NOT IN ('complete', 'failed', 'canceled')"


def upgrade() -> None:
    op.execute(
        "ALTER TABLE jobs "
        "ADD COLUMN type text GENERATED ALWAYS AS (coalesce(doc->>'Type', 'service')) STORED, "
        "ADD COLUMN parent_id text GENERATED ALWAYS AS (coalesce(doc->>'ParentID', '')) STORED, "
        "ADD COLUMN stop boolean GENERATED ALWAYS AS (coalesce((doc->>'Stop')::boolean, false)) STORED, "
        "ADD COLUMN launches_children boolean GENERATED ALWAYS AS ("
        "jsonb_typeof(doc->'Periodic') = 'object' OR (jsonb_typeof(doc->'ParameterizedJob') = 'object' "
        "AND NOT coalesce((doc->>'Dispatched')::boolean, false))) STORED"
    )
    op.execute(f"CREATE INDEX allocs_live ON allocs (namespace, job_id) WHERE {LIVE_ALLOC}")
    op.execute(f"CREATE INDEX evals_live ON evals (namespace, job_id) WHERE {LIVE_EVAL}")
    op.execute("CREATE INDEX allocs_modify_index ON allocs (modify_index)")
    op.execute(
        "CREATE INDEX allocs_run_status ON allocs (client_status, modify_index) WHERE desired_status = 'run'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX allocs_run_status")
    op.execute("DROP INDEX allocs_modify_index")
    op.execute("DROP INDEX evals_live")
    op.execute("DROP INDEX allocs_live")
    op.execute(
        "ALTER TABLE jobs DROP COLUMN launches_children, DROP COLUMN stop, DROP COLUMN parent_id, DROP COLUMN type"
    )
