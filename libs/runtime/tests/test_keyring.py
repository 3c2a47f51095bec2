"""The keyring: items sealed under the active key and bound to their variable, a file shared by
every process (a rotation by one seen by another), old keys kept to open what they sealed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from drover.model.variables import EncryptedItems
from drover.runtime.keyring import Keyring, KeyringError

ITEMS = {"db": "s3cr3t-value", "user": "web"}


def test_items_are_sealed_bound_to_their_variable(tmp_path: Path) -> None:
    ring = Keyring(tmp_path / "keyring.json")
    sealed = ring.seal("default", "app/config", ITEMS)
    assert "s3cr3t" not in sealed.model_dump_json() and sealed.key_id == ring.active().key_id
    assert ring.open("default", "app/config", sealed) == ITEMS
    # Two seals of the same items differ (a fresh nonce each).
    assert ring.seal("default", "app/config", ITEMS).data != sealed.data
    with pytest.raises(KeyringError):
        ring.open("default", "app/other", sealed)  # moved to another path
    with pytest.raises(KeyringError):
        ring.open("prod", "app/config", sealed)
    tampered = EncryptedItems(key_id=sealed.key_id, data=sealed.data[:-4] + "AAA=")
    with pytest.raises(KeyringError):
        ring.open("default", "app/config", tampered)
    with pytest.raises(KeyringError, match="no such key"):
        ring.open("default", "app/config", EncryptedItems(key_id="gone", data=sealed.data))
    assert stat.S_IMODE((tmp_path / "keyring.json").stat().st_mode) == 0o600


def test_a_rotation_by_one_process_is_seen_by_another_and_old_keys_still_open(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    one, two = Keyring(path), Keyring(path)
    old = one.seal("default", "a", ITEMS)
    assert two.open("default", "a", old) == ITEMS
    key = two.rotate()
    assert key["State"] == "active" and key["KeyID"] != old.key_id
    # The other process seals under the new key from now on, and opens the old seal still.
    new = one.seal("default", "a", ITEMS)
    assert new.key_id == key["KeyID"]
    assert one.open("default", "a", old) == two.open("default", "a", new) == ITEMS
    assert [k["State"] for k in one.list_keys()] == ["inactive", "active"]
    assert len(json.loads(path.read_text())["Keys"]) == 2


def test_token_secrets_are_sealed_to_their_accessor_and_hashed_under_a_key_no_rotation_replaces(
    tmp_path: Path,
) -> None:
    path = tmp_path / "keyring.json"
    one, two = Keyring(path), Keyring(path)
    secret = "6c3d3a4e-8f5d-4b8e-9a43-0c1b0d3e2f10"
    sealed = one.seal_secret("accessor-1", secret)
    assert secret not in sealed.model_dump_json()
    assert two.open_secret("accessor-1", sealed) == secret
    with pytest.raises(KeyringError):
        two.open_secret("accessor-2", sealed)  # moved to another token
    # A keyed hash: the same in every process, another under another keyring, never the secret.
    digest = one.secret_hash(secret)
    assert digest == two.secret_hash(secret) != one.secret_hash(secret + "x")
    assert secret not in digest and len(digest) == 64
    assert Keyring(tmp_path / "other.json").secret_hash(secret) != digest
    two.rotate()
    assert Keyring(path).secret_hash(secret) == digest
    assert Keyring(path).open_secret("accessor-1", sealed) == secret


def test_a_keyring_file_written_before_the_hash_key_gets_one_kept_from_then_on(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    Keyring(path).ensure()
    doc = json.loads(path.read_text())
    del doc["HashKey"]
    path.write_text(json.dumps(doc))
    digest = Keyring(path).secret_hash("s")
    assert "HashKey" in json.loads(path.read_text())
    assert Keyring(path).secret_hash("s") == digest
    assert Keyring(path).active().key_id == doc["Active"]
