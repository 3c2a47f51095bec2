"""ACL tokens and policies as the cluster keeps them (nomad/structs/acl.go), and their forms in
Nomad's JSON.

A token's SecretID is never kept in the clear: the API hands in its keyed hash (what a request's
token is looked up by) and its ciphertext under the keyring (what reading the token back
answers), both made before any command sees the token. Times are Unix nanoseconds, written as
RFC 3339 in the JSON; durations nanoseconds, written as Go prints them."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from drover.model.base import NomadModel
from drover.model.durations import format_duration
from drover.model.timefmt import format_time_ns
from drover.model.variables import EncryptedItems

CLIENT = "client"
MANAGEMENT = "management"
TOKEN_TYPES = (CLIENT, MANAGEMENT)
ANONYMOUS_POLICY = "anonymous"
# Nomad's limits (nomad/structs/acl.go).
POLICY_NAME = re.compile(r"^[a-zA-Z0-9-]{1,128}$")
MAX_POLICY_DESCRIPTION = 256
MAX_TOKEN_NAME = 256


def _hash(*parts: str) -> str:
    """Nomad's Hash of an object's mutable fields: base64 of a BLAKE2b-256 over them."""
    h = hashlib.blake2b(digest_size=32)
    for p in parts:
        h.update(p.encode())
    return base64.b64encode(h.digest()).decode()


class ACLPolicy(NomadModel):
    """A named policy: its rules in Nomad's policy language (drover.acl parses them)."""

    name: str
    description: str = ""
    rules: str = ""
    create_index: int = 0
    modify_index: int = 0

    def hash(self) -> str:
        return _hash(self.name, self.description, self.rules)

    def stub(self) -> dict[str, Any]:
        """Nomad's ACLPolicyListStub."""
        return {
            "Name": self.name,
            "Description": self.description,
            "JobACL": None,
            "Hash": self.hash(),
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        }

    def api_form(self, rules_json: Any) -> dict[str, Any]:
        """Nomad's ACLPolicy, with its rules parsed (`RulesJSON`)."""
        return {
            "Name": self.name,
            "Description": self.description,
            "Rules": self.rules,
            "RulesJSON": rules_json,
            "JobACL": None,
            "Hash": self.hash(),
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        }


class ACLToken(NomadModel):
    """A token as kept: its public fields, and its secret as a keyed hash and a ciphertext."""

    accessor_id: str
    name: str = ""
    type: str = CLIENT
    policies: list[str] = Field(default_factory=list)
    global_: bool = Field(default=False, alias="Global")
    create_time: int = 0
    # 0: it never expires.
    expiration_time: int = 0
    expiration_ttl: int = 0
    secret_hash: str = ""
    sealed_secret: EncryptedItems | None = None
    create_index: int = 0
    modify_index: int = 0

    def is_management(self) -> bool:
        return self.type == MANAGEMENT

    def expired(self, now: int) -> bool:
        """Whether it has expired at `now` (Unix ns), as Nomad's IsExpired."""
        return bool(self.expiration_time) and self.expiration_time < now

    def hash(self) -> str:
        return _hash(self.name, self.type, *self.policies, "global" if self.global_ else "local",
                     str(self.expiration_time), str(self.expiration_ttl))  # fmt: skip

    def stub(self) -> dict[str, Any]:
        """Nomad's ACLTokenListStub: no SecretID."""
        return {
            "AccessorID": self.accessor_id,
            "Name": self.name,
            "Type": self.type,
            "Policies": list(self.policies),
            "Roles": None,
            "Global": self.global_,
            "Hash": self.hash(),
            "CreateTime": format_time_ns(self.create_time),
            "ExpirationTime": format_time_ns(self.expiration_time) if self.expiration_time else None,
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        }

    def api_form(self, secret_id: str) -> dict[str, Any]:
        """Nomad's ACLToken, with its SecretID in the clear (for its holder or a manager)."""
        stub = self.stub()
        return {
            "AccessorID": self.accessor_id,
            "SecretID": secret_id,
            **{k: v for k, v in stub.items() if k != "AccessorID"},
            "ExpirationTTL": format_duration(self.expiration_ttl) if self.expiration_ttl else "",
        }


@dataclass(frozen=True)
class TokenSecret:
    """A token's IDs and its SecretID as the API prepared it for a command: hashed with the
    keyring's hash key and sealed under its active key, never in the clear."""

    accessor_id: str
    secret_hash: str
    sealed: EncryptedItems


def anonymous_token() -> dict[str, Any]:
    """The token a request without one stands for (Nomad's AnonymousACLToken)."""
    return {
        "AccessorID": "anonymous",
        "SecretID": "anonymous",
        "Name": "Anonymous Token",
        "Type": CLIENT,
        "Policies": [ANONYMOUS_POLICY],
        "Roles": None,
        "Global": False,
        "Hash": None,
        "CreateTime": format_time_ns(0),
        "ExpirationTime": None,
        "ExpirationTTL": "",
        "CreateIndex": 0,
        "ModifyIndex": 0,
    }
