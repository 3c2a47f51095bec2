"""The key nodes' SecretIDs are hashed with: a client's secret is only ever compared, so the
servers keep its HMAC-SHA256 under this key (NodeRegistered.secret_hash), never the secret. A
file of its own beside the keyring (`<keyring dir>/node-secret.key`, mode 0600), made once by
whichever process needs it first: every API process must read the same one, as the keyring.
Without the key a hash leaked from the log, the stream or the audit trail confirms no guess."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from drover.runtime.keyring import keyring_path
from drover.runtime.settings import Settings

KEY_FILE = "node-secret.key"


def node_secret_key_path(settings: Settings) -> Path:
    return keyring_path(settings).with_name(KEY_FILE)


def ensure_key(path: Path) -> bytes:
    """The key in `path`, written first (atomically: a concurrent starter's wins) if absent."""
    with contextlib.suppress(FileNotFoundError):
        return base64.b64decode(path.read_text().strip())
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own: two threads of one process may make the key at once.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # fails if another process made it meanwhile: theirs is the key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return base64.b64decode(path.read_text().strip())


class NodeSecretHasher:
    """Hashes node SecretIDs under the key in `path`, read (or made) at the first hash."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._key = b""

    @classmethod
    def from_settings(cls, settings: Settings) -> NodeSecretHasher:
        return cls(node_secret_key_path(settings).resolve())

    def hash(self, secret: str) -> str:
        if not self._key:
            key = ensure_key(self.path)
            if len(key) < 16:
                raise ValueError(f"the node secret key in {self.path} is too short")
            self._key = key
        return hmac.new(self._key, secret.encode(), hashlib.sha256).hexdigest()
