"""The keyring that seals Nomad Variables' items (Nomad's root keys): AES-256-GCM keys in a file
kept apart from the log (`DROVER_KEYRING`, else `<data_dir>/keyring.json`, mode 0600), one of
them active. Every API process reads the same file: a rotation by one is seen by the others
at their next seal or at a ciphertext under a key they have not loaded. Old keys stay, so
every value sealed under one still opens; a value is sealed again under the active key at its
next write, or by a full rotation's pass.

Each ciphertext is bound to its variable (namespace and path as associated data), so one
cannot be moved to another path.

ACL tokens' SecretIDs are sealed the same way (bound to the token's AccessorID), and looked up
by their keyed hash: HMAC-SHA256 under the file's hash key, one that no rotation replaces (a
new one would lose every token), created with the file or added to an older file at first use."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from drover.model.variables import EncryptedItems
from drover.runtime.settings import Settings

ALGORITHM = "aes256-gcm"
_NONCE = 12


class KeyringError(Exception):
    """A ciphertext under a key the keyring does not hold, or one that does not open."""


@dataclass(frozen=True)
class RootKey:
    key_id: str
    key: bytes
    create_time: int

    def meta(self, active: bool) -> dict[str, Any]:
        """Nomad's RootKeyMeta."""
        return {
            "KeyID": self.key_id,
            "Algorithm": ALGORITHM,
            "CreateTime": self.create_time,
            "State": "active" if active else "inactive",
        }


def keyring_path(settings: Settings) -> Path:
    return Path(settings.keyring) if settings.keyring else Path(settings.data_dir) / "keyring.json"


class Keyring:
    """The keyring file at `path`, created with one key if absent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mutex = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        # The active key's ID and every key, replaced together (threads read them unlocked).
        self._loaded: tuple[str, dict[str, RootKey]] = ("", {})
        self._hash_key = b""

    @classmethod
    def from_settings(cls, settings: Settings) -> Keyring:
        return cls(keyring_path(settings))

    # --- the file ---
    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The file's writers one at a time, across processes."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.path.read_text())
        return doc

    def _read_file(self) -> tuple[str, dict[str, RootKey]]:
        doc = self._read_doc()
        keys = {
            k["KeyID"]: RootKey(k["KeyID"], base64.b64decode(k["Key"]), int(k["CreateTime"]))
            for k in doc["Keys"]
        }
        return str(doc["Active"]), keys

    def _write_file(self, active: str, keys: dict[str, RootKey], hash_key: bytes = b"") -> None:
        """The file with `active` and `keys`, and the hash key it holds (or `hash_key`)."""
        if not hash_key and self.path.exists():
            hash_key = base64.b64decode(self._read_doc().get("HashKey", ""))
        doc = {
            "Active": active,
            "Keys": [
                {"KeyID": k.key_id, "Key": base64.b64encode(k.key).decode(), "CreateTime": k.create_time}
                for k in keys.values()
            ],
            "HashKey": base64.b64encode(hash_key or secrets.token_bytes(32)).decode(),
        }
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    @staticmethod
    def _new_key() -> RootKey:
        return RootKey(str(uuid.uuid4()), AESGCM.generate_key(bit_length=256), time.time_ns())

    def ensure(self) -> Keyring:
        """Create the file with one active key unless it exists."""
        if not self.path.exists():
            with self._exclusive():
                if not self.path.exists():
                    key = self._new_key()
                    self._write_file(key.key_id, {key.key_id: key})
        return self

    def _refresh(self, force: bool = False) -> tuple[str, dict[str, RootKey]]:
        """The active key's ID and every key, the file read again if it changed since."""
        self.ensure()
        st = self.path.stat()
        stamp = (st.st_mtime_ns, st.st_ino)
        with self._mutex:
            if force or stamp != self._stamp:
                self._loaded = self._read_file()
                self._stamp = stamp
            return self._loaded

    # --- keys ---
    def active(self) -> RootKey:
        active, keys = self._refresh()
        return keys[active]

    def list_keys(self) -> list[dict[str, Any]]:
        """Every key's metadata (Nomad's RootKeyMeta), oldest first."""
        active, keys = self._refresh()
        ordered = sorted(keys.values(), key=lambda k: k.create_time)
        return [k.meta(k.key_id == active) for k in ordered]

    def rotate(self) -> dict[str, Any]:
        """A new active key; the old ones stay, to open what they sealed."""
        with self._exclusive():
            self.ensure()
            _, keys = self._read_file()
            key = self._new_key()
            keys[key.key_id] = key
            self._write_file(key.key_id, keys)
        self._refresh(force=True)
        return key.meta(True)

    def _key(self, key_id: str) -> RootKey:
        key = self._refresh()[1].get(key_id)
        if key is None:  # rotated by another process within the file's timestamp's grain
            key = self._refresh(force=True)[1].get(key_id)
        if key is None:
            raise KeyringError(f"no such key {key_id!r} in the keyring")
        return key

    # --- ACL token secrets ---
    def hash_key(self) -> bytes:
        """The key of the secrets' keyed hashes (added to a file written before it existed)."""
        if not self._hash_key:
            self.ensure()
            raw = self._read_doc().get("HashKey", "")
            if not raw:
                with self._exclusive():
                    active, keys = self._read_file()
                    raw = self._read_doc().get("HashKey", "")
                    if not raw:
                        self._write_file(active, keys, secrets.token_bytes(32))
                        raw = self._read_doc()["HashKey"]
            self._hash_key = base64.b64decode(raw)
        return self._hash_key

    def secret_hash(self, secret: str) -> str:
        """The keyed hash a token is looked up by (HMAC-SHA256, hex)."""
        return hmac.new(self.hash_key(), secret.encode(), hashlib.sha256).hexdigest()

    def seal_secret(self, accessor_id: str, secret: str) -> EncryptedItems:
        """A token's SecretID sealed under the active key, bound to its AccessorID."""
        key = self.active()
        nonce = secrets.token_bytes(_NONCE)
        sealed = AESGCM(key.key).encrypt(nonce, secret.encode(), f"acl-token/{accessor_id}".encode())
        return EncryptedItems(key_id=key.key_id, data=base64.b64encode(nonce + sealed).decode())

    def open_secret(self, accessor_id: str, sealed: EncryptedItems) -> str:
        raw = base64.b64decode(sealed.data)
        try:
            plain = AESGCM(self._key(sealed.key_id).key).decrypt(
                raw[:_NONCE], raw[_NONCE:], f"acl-token/{accessor_id}".encode()
            )
        except KeyringError:
            raise
        except Exception as e:
            raise KeyringError(f"the secret of ACL token {accessor_id} does not decrypt") from e
        return plain.decode()

    def seal_text(self, bound_to: str, text: str) -> EncryptedItems:
        """`text` sealed under the active key, bound to `bound_to` (opens under no other)."""
        key = self.active()
        nonce = secrets.token_bytes(_NONCE)
        sealed = AESGCM(key.key).encrypt(nonce, text.encode(), bound_to.encode())
        return EncryptedItems(key_id=key.key_id, data=base64.b64encode(nonce + sealed).decode())

    def open_text(self, bound_to: str, sealed: EncryptedItems) -> str:
        """What `seal_text(bound_to, ...)` sealed; KeyringError if it does not open."""
        raw = base64.b64decode(sealed.data)
        try:
            plain = AESGCM(self._key(sealed.key_id).key).decrypt(
                raw[:_NONCE], raw[_NONCE:], bound_to.encode()
            )
        except KeyringError:
            raise
        except Exception as e:
            raise KeyringError(f"a value bound to {bound_to} does not decrypt") from e
        return plain.decode()

    # --- sealing ---
    def seal(self, namespace: str, path: str, items: dict[str, str]) -> EncryptedItems:
        """`items` sealed under the active key, bound to the variable."""
        key = self.active()
        nonce = secrets.token_bytes(_NONCE)
        plain = json.dumps(items, separators=(",", ":"), sort_keys=True).encode()
        sealed = AESGCM(key.key).encrypt(nonce, plain, f"{namespace}/{path}".encode())
        return EncryptedItems(key_id=key.key_id, data=base64.b64encode(nonce + sealed).decode())

    def open(self, namespace: str, path: str, sealed: EncryptedItems) -> dict[str, str]:
        """The items `sealed` holds."""
        raw = base64.b64decode(sealed.data)
        try:
            plain = AESGCM(self._key(sealed.key_id).key).decrypt(
                raw[:_NONCE], raw[_NONCE:], f"{namespace}/{path}".encode()
            )
        except KeyringError:
            raise
        except Exception as e:  # InvalidTag: tampered with, or bound to another variable
            raise KeyringError(f"variable {namespace}/{path} does not decrypt") from e
        items: dict[str, str] = json.loads(plain)
        return items
