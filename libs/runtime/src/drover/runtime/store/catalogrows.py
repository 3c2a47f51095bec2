"""`SqlState`'s part for the catalogues no scheduling decision reads: the `variables`,
`service_registrations`, `namespaces`, `acl_policies` and `acl_tokens` rows
(drover.model.catalogstate is their in-memory side). A
registration removed by alloc or node (an alloc ended or lost, a node down) is not read first:
one statement for the batch, however many allocs a plan marks lost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from drover.model.acl import ACLPolicy, ACLToken
from drover.model.namespace import Namespace, builtin
from drover.model.serviceregistration import ServiceRegistration
from drover.model.variables import VariableEncrypted
from drover.runtime.store.collected import DELETED

T = TypeVar("T", bound=BaseModel)
# A statement for the raw (psycopg) connection: SQL with %s placeholders, and its parameters.
Statement = tuple[str, Any]


def row_doc(obj: BaseModel) -> str:
    """A row's `doc`: the model as Nomad's JSON."""
    return obj.model_dump_json(by_alias=True)


class CatalogRows:
    """Held by `SqlState`, which owns the buffers, the loader and the writers named here."""

    _dirty: dict[str, set[Any]]

    def init_catalogs(self) -> None:
        self._variables: dict[tuple[str, str], Any] = {}
        self._services: dict[str, Any] = {}
        self._service_drop_allocs: set[str] = set()
        self._service_drop_nodes: set[str] = set()
        self._namespaces: dict[str, Any] = {}
        self._acl_policies: dict[str, Any] = {}
        self._acl_tokens: dict[str, Any] = {}

    def _load(self, cache: dict[Any, Any], key: Any, sql: str, params: Any, model: type[T]) -> T | None:
        raise NotImplementedError  # SqlState's

    def _split(self, cache: dict[Any, Any], table: str) -> tuple[list[Any], list[Any]]:
        raise NotImplementedError  # SqlState's

    @staticmethod
    def _upsert(
        writes: list[Statement], table: str, key: tuple[str, ...], rows: list[dict[str, Any]]
    ) -> None:
        raise NotImplementedError  # SqlState's

    # --- reads ---
    def variable(self, namespace: str, path: str) -> VariableEncrypted | None:
        return self._load(
            self._variables,
            (namespace, path),
            "SELECT doc::text FROM variables WHERE namespace = %s AND path = %s",
            (namespace, path),
            VariableEncrypted,
        )

    def service(self, service_id: str) -> ServiceRegistration | None:
        return self._load(
            self._services,
            service_id,
            "SELECT doc::text FROM service_registrations WHERE id = %s",
            (service_id,),
            ServiceRegistration,
        )

    def namespace(self, name: str) -> Namespace | None:
        found = self._load(
            self._namespaces, name, "SELECT doc::text FROM namespaces WHERE name = %s", (name,), Namespace
        )
        return found or builtin(name)

    def acl_policy(self, name: str) -> ACLPolicy | None:
        return self._load(
            self._acl_policies, name, "SELECT doc::text FROM acl_policies WHERE name = %s", (name,), ACLPolicy
        )

    def acl_token(self, accessor_id: str) -> ACLToken | None:
        return self._load(
            self._acl_tokens,
            accessor_id,
            "SELECT doc::text FROM acl_tokens WHERE accessor_id = %s",
            (accessor_id,),
            ACLToken,
        )

    # --- writes (buffered) ---
    def upsert_variable(self, var: VariableEncrypted) -> None:
        self._variables[(var.namespace, var.path)] = var
        self._dirty["variables"].add((var.namespace, var.path))

    def delete_variable(self, namespace: str, path: str) -> None:
        self._variables[(namespace, path)] = DELETED
        self._dirty["variables"].add((namespace, path))

    def upsert_service(self, reg: ServiceRegistration) -> None:
        self._services[reg.id] = reg
        self._dirty["services"].add(reg.id)

    def delete_service(self, service_id: str) -> None:
        self._services[service_id] = DELETED
        self._dirty["services"].add(service_id)

    def delete_services_of(self, alloc_ids: Sequence[str], node_id: str) -> None:
        allocs = set(alloc_ids)
        for service_id, reg in self._services.items():
            if reg is not DELETED and (reg.alloc_id in allocs or (node_id and reg.node_id == node_id)):
                self._services[service_id] = DELETED
        self._service_drop_allocs |= allocs
        if node_id:
            self._service_drop_nodes.add(node_id)

    def upsert_namespace(self, ns: Namespace) -> None:
        self._namespaces[ns.name] = ns
        self._dirty["namespaces"].add(ns.name)

    def delete_namespace(self, name: str) -> None:
        self._namespaces[name] = DELETED
        self._dirty["namespaces"].add(name)

    def upsert_acl_policy(self, policy: ACLPolicy) -> None:
        self._acl_policies[policy.name] = policy
        self._dirty["acl_policies"].add(policy.name)

    def delete_acl_policy(self, name: str) -> None:
        self._acl_policies[name] = DELETED
        self._dirty["acl_policies"].add(name)

    def upsert_acl_token(self, token: ACLToken) -> None:
        self._acl_tokens[token.accessor_id] = token
        self._dirty["acl_tokens"].add(token.accessor_id)

    def delete_acl_token(self, accessor_id: str) -> None:
        self._acl_tokens[accessor_id] = DELETED
        self._dirty["acl_tokens"].add(accessor_id)

    def services_touched(self) -> bool:
        return bool(self._dirty["services"] or self._service_drop_allocs or self._service_drop_nodes)

    def flush_catalogs(self, writes: list[Statement]) -> None:
        variables, gone = self._split(self._variables, "variables")
        self._upsert(writes, "variables", ("namespace", "path"), [
            {"namespace": v.namespace, "path": v.path, "doc": row_doc(v), "modify_index": v.modify_index}
            for v in variables
        ])  # fmt: skip
        for ns, path in gone:
            writes.append(("DELETE FROM variables WHERE namespace = %s AND path = %s", (ns, path)))
        self._flush_services(writes)
        namespaces, gone = self._split(self._namespaces, "namespaces")
        self._upsert(writes, "namespaces", ("name",), [
            {"name": n.name, "doc": row_doc(n), "modify_index": n.modify_index} for n in namespaces
        ])  # fmt: skip
        if gone:
            writes.append(("DELETE FROM namespaces WHERE name = ANY(%s)", (gone,)))
        self._flush_acl(writes)

    def _flush_acl(self, writes: list[Statement]) -> None:
        """Deletions first: a token deleted and another written with its secret's hash (a
        bootstrap reset with the same BootstrapSecret) in one batch must not collide."""
        policies, gone_policies = self._split(self._acl_policies, "acl_policies")
        tokens, gone_tokens = self._split(self._acl_tokens, "acl_tokens")
        if gone_policies:
            writes.append(("DELETE FROM acl_policies WHERE name = ANY(%s)", (gone_policies,)))
        if gone_tokens:
            writes.append(("DELETE FROM acl_tokens WHERE accessor_id = ANY(%s)", (gone_tokens,)))
        self._upsert(writes, "acl_policies", ("name",), [
            {"name": p.name, "doc": row_doc(p), "modify_index": p.modify_index} for p in policies
        ])  # fmt: skip
        self._upsert(writes, "acl_tokens", ("accessor_id",), [
            {"accessor_id": t.accessor_id, "secret_hash": t.secret_hash, "doc": row_doc(t),
             "modify_index": t.modify_index}
            for t in tokens
        ])  # fmt: skip

    def _flush_services(self, writes: list[Statement]) -> None:
        """The removals by alloc and node first (what the batch wrote after them is in the
        cache and goes after), then the registrations by ID."""
        if self._service_drop_allocs or self._service_drop_nodes:
            writes.append((
                "DELETE FROM service_registrations WHERE alloc_id = ANY(%s) OR node_id = ANY(%s)",
                (sorted(self._service_drop_allocs), sorted(self._service_drop_nodes)),
            ))  # fmt: skip
            self._service_drop_allocs.clear()
            self._service_drop_nodes.clear()
        regs, gone = self._split(self._services, "services")
        self._upsert(writes, "service_registrations", ("id",), [
            {"id": r.id, "namespace": r.namespace, "service_name": r.service_name, "node_id": r.node_id,
             "job_id": r.job_id, "alloc_id": r.alloc_id, "doc": row_doc(r), "modify_index": r.modify_index}
            for r in regs
        ])  # fmt: skip
        if gone:
            writes.append(("DELETE FROM service_registrations WHERE id = ANY(%s)", (gone,)))
