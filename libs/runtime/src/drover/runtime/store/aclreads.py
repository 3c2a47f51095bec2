"""The API's reads of ACL policies and tokens (`Reads`' part), and what the ACL commands read:
a token by AccessorID or by its secret's keyed hash, the policies a token names, the lists
(by prefix, tokens paged by AccessorID), the streams' versions, and the bootstrap's reset
index (the position of the last `ACLBootstrapped`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from drover.model.acl import ACLPolicy, ACLToken
from drover.model.catalogstate import CatalogState
from drover.model.events import ACL_BOOTSTRAP_STREAM, acl_policy_stream, acl_token_stream
from drover.runtime.store.eventstore import EventStore


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"


def load_acl(conn: Connection, state: CatalogState) -> None:
    """Every policy and token into a replica's state (part of its snapshot)."""
    for (doc,) in conn.execute(text("SELECT doc::text FROM acl_policies")):
        state.upsert_acl_policy(ACLPolicy.model_validate_json(doc))
    for (doc,) in conn.execute(text("SELECT doc::text FROM acl_tokens")):
        state.upsert_acl_token(ACLToken.model_validate_json(doc))


class AclReads:
    store: EventStore

    def _docs(self, sql: str, **params: Any) -> list[str]:
        raise NotImplementedError  # Reads'

    def acl_policy(self, name: str) -> ACLPolicy | None:
        docs = self._docs("SELECT doc::text FROM acl_policies WHERE name = :n", n=name)
        return ACLPolicy.model_validate_json(docs[0]) if docs else None

    def acl_policies(self, prefix: str = "") -> list[ACLPolicy]:
        docs = self._docs(
            "SELECT doc::text FROM acl_policies WHERE name LIKE :p ORDER BY name", p=_like_prefix(prefix)
        )
        return [ACLPolicy.model_validate_json(d) for d in docs]

    def acl_policies_named(self, names: list[str]) -> list[ACLPolicy]:
        """The policies of `names` that exist (a token may name one that does not)."""
        docs = self._docs("SELECT doc::text FROM acl_policies WHERE name = ANY(:n) ORDER BY name", n=names)
        return [ACLPolicy.model_validate_json(d) for d in docs]

    def acl_token(self, accessor_id: str) -> ACLToken | None:
        docs = self._docs("SELECT doc::text FROM acl_tokens WHERE accessor_id = :a", a=accessor_id)
        return ACLToken.model_validate_json(docs[0]) if docs else None

    def acl_token_by_hash(self, secret_hash: str) -> ACLToken | None:
        docs = self._docs("SELECT doc::text FROM acl_tokens WHERE secret_hash = :h", h=secret_hash)
        return ACLToken.model_validate_json(docs[0]) if docs else None

    def acl_tokens(self, prefix: str = "", *, start: str = "", limit: int = 0) -> list[ACLToken]:
        where = ["accessor_id LIKE :p"]
        params: dict[str, Any] = {"p": _like_prefix(prefix)}
        if start:
            where.append("accessor_id >= :start")
            params["start"] = start
        tail = ""
        if limit:
            params["limit"] = limit
            tail = " LIMIT :limit"
        docs = self._docs(
            f"SELECT doc::text FROM acl_tokens WHERE {' AND '.join(where)} ORDER BY accessor_id{tail}",
            **params,
        )
        return [ACLToken.model_validate_json(d) for d in docs]

    def acl_policy_stream_version(self, name: str) -> int:
        return self.store.stream_version(acl_policy_stream(name))

    def acl_token_stream_version(self, accessor_id: str) -> int:
        return self.store.stream_version(acl_token_stream(accessor_id))

    def acl_bootstrap(self) -> tuple[int, int]:
        """(the bootstrap stream's version, the position of its last event): (0, 0) before the
        first bootstrap."""
        with self.store.reader.connect() as conn:
            row = conn.execute(
                text("SELECT version, position FROM events WHERE stream = :s ORDER BY version DESC LIMIT 1"),
                {"s": ACL_BOOTSTRAP_STREAM},
            ).first()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def known_namespaces(self) -> list[str]:
        """The namespaces of the catalogue and those something lives in (`default` always): what `namespace=*` stands for
        where a subscription is checked namespace by namespace."""
        docs = self._docs(
            "SELECT 'default' UNION SELECT name FROM namespaces UNION SELECT DISTINCT namespace FROM jobs "
            "UNION SELECT DISTINCT namespace FROM variables ORDER BY 1"
        )
        return docs
