"""ACL policies and tokens: projections written by the reducer like the others. A token's
SecretID is not stored: its keyed hash (HMAC-SHA256 under the keyring's hash key, unique: the
lookup of a request's token) and its ciphertext (in the document) are.

Revision ID: acl_0001
Revises: svc_0001
"""

from alembic import op

revision = "acl_0001"
down_revision = "ns_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE acl_policies (name text PRIMARY KEY, doc jsonb NOT NULL, modify_index bigint NOT NULL)"
    )
    op.execute(
        "CREATE TABLE acl_tokens ("
        "accessor_id text PRIMARY KEY, secret_hash text NOT NULL UNIQUE, doc jsonb NOT NULL, "
        "modify_index bigint NOT NULL)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE acl_tokens")
    op.execute("DROP TABLE acl_policies")
