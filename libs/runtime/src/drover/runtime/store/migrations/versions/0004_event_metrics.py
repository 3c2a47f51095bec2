"""Keep placement metrics beside a plan's event, not in it.

A PlanApplied's placement metrics (why each alloc went where it did) were about 72% of its
stored bytes, and the relay published them onto EVENTS for every consumer to receive and skip:
every consumer of the stream is a replica, and replicas drop metrics. They are now stored in
`events.metrics` (a JSON object by alloc ID, NULL for events without any), which the relay does
not read; full readers of the log (a rebuild, a replay) join them back. Events stored before
keep their metrics inline and are read as they were.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable without a default: no rewrite of the table. `text`, as the alloc documents: the
    # services write it and read it back whole.
    op.execute("ALTER TABLE events ADD COLUMN metrics text")


def downgrade() -> None:
    # The metrics back into each event, in the forms the decoder reads: a member of each alloc
    # (a plan stored as a list), or one JSON text in order of the ID column (in columns). The
    # events' JSON is rewritten through jsonb (members reordered, the same event).
    op.execute(
        """
        UPDATE events SET data = jsonb_set(data::jsonb, '{Allocs}', (
            SELECT jsonb_agg(CASE WHEN metrics::jsonb ? (a ->> 'ID')
                THEN a || jsonb_build_object('Metrics', metrics::jsonb -> (a ->> 'ID')) ELSE a END
                ORDER BY n)
            FROM jsonb_array_elements(data::jsonb -> 'Allocs') WITH ORDINALITY AS t (a, n)))::json
        WHERE metrics IS NOT NULL AND data::jsonb ? 'Allocs'
        """
    )
    op.execute(
        """
        UPDATE events SET data = jsonb_set(data::jsonb, '{Placements,Metrics}', to_jsonb((
            SELECT jsonb_agg(coalesce(metrics::jsonb -> id, 'null'::jsonb) ORDER BY n)
            FROM jsonb_array_elements_text(data::jsonb #> '{Placements,Columns,ID}')
                WITH ORDINALITY AS t (id, n))::text))::json
        WHERE metrics IS NOT NULL AND data::jsonb ? 'Placements'
        """
    )
    op.execute("ALTER TABLE events DROP COLUMN metrics")
