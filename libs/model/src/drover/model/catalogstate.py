"""The in-memory state's catalogues that no scheduling decision reads: Nomad variables (their
items sealed), nomad service registrations and namespaces, by key, each registration also
found by its alloc so an ended alloc's go in one step, and ACL policies and tokens (their secrets
hashed and sealed). `InMemoryState`'s part (drover.model.state)."""

from __future__ import annotations

from collections.abc import Sequence

from drover.model.acl import ACLPolicy, ACLToken
from drover.model.namespace import Namespace, builtin
from drover.model.serviceregistration import ServiceRegistration
from drover.model.variables import VariableEncrypted


class CatalogState:
    def init_catalogs(self) -> None:
        # Variables by (namespace, path), their items sealed (drover.model.variables).
        self.variables: dict[tuple[str, str], VariableEncrypted] = {}
        # Service registrations by ID, and their IDs by alloc.
        self.services: dict[str, ServiceRegistration] = {}
        self._services_by_alloc: dict[str, dict[str, None]] = {}
        # Namespaces by name, as written (`default` only once it was).
        self.namespaces: dict[str, Namespace] = {}
        # ACL policies by name, tokens by AccessorID.
        self.acl_policies: dict[str, ACLPolicy] = {}
        self.acl_tokens: dict[str, ACLToken] = {}

    def namespace(self, name: str) -> Namespace | None:
        return self.namespaces.get(name) or builtin(name)

    def upsert_namespace(self, ns: Namespace) -> None:
        self.namespaces[ns.name] = ns

    def delete_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    def variable(self, namespace: str, path: str) -> VariableEncrypted | None:
        return self.variables.get((namespace, path))

    def upsert_variable(self, var: VariableEncrypted) -> None:
        self.variables[(var.namespace, var.path)] = var

    def delete_variable(self, namespace: str, path: str) -> None:
        self.variables.pop((namespace, path), None)

    def service(self, service_id: str) -> ServiceRegistration | None:
        return self.services.get(service_id)

    def upsert_service(self, reg: ServiceRegistration) -> None:
        self.services[reg.id] = reg
        self._services_by_alloc.setdefault(reg.alloc_id, {})[reg.id] = None

    def delete_service(self, service_id: str) -> None:
        reg = self.services.pop(service_id, None)
        by_alloc = self._services_by_alloc.get(reg.alloc_id) if reg is not None else None
        if reg is not None and by_alloc is not None:
            by_alloc.pop(service_id, None)
            if not by_alloc:
                del self._services_by_alloc[reg.alloc_id]

    def delete_services_of(self, alloc_ids: Sequence[str], node_id: str) -> None:
        ids = [i for a in alloc_ids for i in self._services_by_alloc.get(a, ())]
        if node_id:
            ids.extend(r.id for r in self.services.values() if r.node_id == node_id)
        for service_id in dict.fromkeys(ids):
            self.delete_service(service_id)

    def acl_policy(self, name: str) -> ACLPolicy | None:
        return self.acl_policies.get(name)

    def upsert_acl_policy(self, policy: ACLPolicy) -> None:
        self.acl_policies[policy.name] = policy

    def delete_acl_policy(self, name: str) -> None:
        self.acl_policies.pop(name, None)

    def acl_token(self, accessor_id: str) -> ACLToken | None:
        return self.acl_tokens.get(accessor_id)

    def upsert_acl_token(self, token: ACLToken) -> None:
        self.acl_tokens[token.accessor_id] = token

    def delete_acl_token(self, accessor_id: str) -> None:
        self.acl_tokens.pop(accessor_id, None)
