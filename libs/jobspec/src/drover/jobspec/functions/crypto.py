"""Hashes, bcrypt, RSA decryption and UUIDs, as Nomad's jobspec functions give them. bcrypt's
salt and uuidv4 need randomness, which a pure parse has only when its caller hands it in
(`random`, n bytes at a call); without it they are refused, never made up."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Any

import bcrypt as bcrypt_lib

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, takes, whole

Random = Callable[[int], bytes]

# Drover's bound on bcrypt's cost: each step doubles the work, and past this one a parse (an
# API request) would take minutes to hours; Nomad takes up to 31.
MAX_BCRYPT_COST = 16

_BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_STANDARD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_NAMESPACES = {
    "dns": uuid.NAMESPACE_DNS,
    "url": uuid.NAMESPACE_URL,
    "oid": uuid.NAMESPACE_OID,
    "x500": uuid.NAMESPACE_X500,
}
_PEM = re.compile(r"-----BEGIN ([^-\n]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def _digest(algorithm: str) -> Fn:
    return takes(lambda s: hashlib.new(algorithm, string(s, "str").encode()).hexdigest(), "str")


def _needs(random: Random | None, what: str) -> Random:
    if random is None:
        raise FunctionError(f"{what} needs randomness, and this parse was handed none")
    return random


def _bcrypt(random: Random | None) -> Fn:
    def fn(s: Any, *cost: Any) -> str:
        if len(cost) > 1:
            raise FunctionError("bcrypt() takes no more than two arguments")
        rounds = whole(cost[0], "cost") if cost else 10
        password = string(s, "str").encode()
        # As Go's bcrypt: a cost under 4 is taken as the default, over 31 refused, and a
        # password past 72 bytes refused rather than cut.
        if rounds < 4:
            rounds = 10
        if rounds > 31:
            raise FunctionError(
                f"error occurred generating password: cost {rounds} is outside the range 4 to 31"
            )
        if rounds > MAX_BCRYPT_COST:
            raise FunctionError(f"a cost of {rounds} would take too long (at most {MAX_BCRYPT_COST} here)")
        if len(password) > 72:
            raise FunctionError("error occurred generating password: password length exceeds 72 bytes")
        salt = _bcrypt_base64(_needs(random, "bcrypt")(16))
        return bcrypt_lib.hashpw(password, f"$2a${rounds:02d}${salt}".encode()).decode()

    return takes(fn, "str", rest="cost")


def _bcrypt_base64(raw: bytes) -> str:
    # bcrypt's own base64 alphabet, without padding: 16 bytes are 22 characters.
    standard = base64.b64encode(raw).decode().rstrip("=")
    return standard.translate(str.maketrans(_STANDARD_ALPHABET, _BCRYPT_ALPHABET))


def _uuidv4(random: Random | None) -> Fn:
    def fn() -> str:
        raw = bytearray(_needs(random, "uuidv4")(16))
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
        return str(uuid.UUID(bytes=bytes(raw)))

    return takes(fn)


def _uuidv5(namespace: Any, name: Any) -> str:
    ns_text = string(namespace, "namespace")
    ns = _NAMESPACES.get(ns_text) or _parse_uuid(ns_text)
    return str(uuid.uuid5(ns, string(name, "name")))


def _parse_uuid(text: str) -> uuid.UUID:
    """A UUID as Go's uuid.Parse reads one: 8-4-4-4-12 hex digits, perhaps in braces or after
    "urn:uuid:", or 32 hex digits."""
    body = text
    if len(text) == 45 and text[:9].lower() == "urn:uuid:":
        body = text[9:]
    elif len(text) == 38 and text[0] == "{" and text[-1] == "}":
        body = text[1:-1]
    pattern = r"[0-9a-fA-F]{32}" if len(body) == 32 else r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
    if not re.fullmatch(pattern, body):
        raise FunctionError(f"uuidv5() doesn't support namespace {text} (not a UUID)")
    return uuid.UUID(body)


def _rsadecrypt(ciphertext: Any, privatekey: Any) -> str:
    text = string(ciphertext, "ciphertext")
    try:
        sealed = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise FunctionError(f'failed to decode input "{text}": cipher text must be base64-encoded') from None
    n, d = _pkcs1_private_key(string(privatekey, "privatekey"))
    size = (n.bit_length() + 7) // 8
    if n.bit_length() < 1024:
        raise FunctionError(f"crypto/rsa: {n.bit_length()}-bit keys are insecure")
    if len(sealed) != size or int.from_bytes(sealed, "big") >= n:
        raise FunctionError("crypto/rsa: decryption error")
    # PKCS #1 v1.5: 00 02, at least 8 bytes of non-zero padding, 00, the message.
    block = pow(int.from_bytes(sealed, "big"), d, n).to_bytes(size, "big")
    end = block.find(b"\x00", 2)
    if block[:2] != b"\x00\x02" or end < 10:
        raise FunctionError("crypto/rsa: decryption error")
    return block[end + 1 :].decode("utf-8", errors="replace")


def _pkcs1_private_key(pem: str) -> tuple[int, int]:
    """The modulus and private exponent of the first PEM block, a PKCS #1 RSA private key."""
    m = _PEM.search(pem)
    if m is None:
        raise FunctionError("failed to parse key: no key found")
    lines = m.group(2).splitlines()
    headers = []
    if lines and ":" in lines[0]:  # headers, up to a blank line
        while lines and lines[0].strip():
            headers.append(lines.pop(0).replace(" ", ""))
    body = "".join(lines)
    if "Proc-Type:4,ENCRYPTED" in headers:
        raise FunctionError(
            "failed to parse key: password protected keys are not supported. Please decrypt the key prior to use"
        )
    try:
        der = base64.b64decode("".join(body.split()), validate=True)
        fields = _der_sequence(der)
    except (binascii.Error, ValueError, IndexError):
        raise FunctionError("x509: failed to parse private key") from None
    if len(fields) < 9 or not all(isinstance(f, int) for f in fields[:9]):
        raise FunctionError(
            "x509: failed to parse private key (use ParsePKCS8PrivateKey instead for this key format)"
        )
    version, n, _, d = (f for f in fields[:4] if isinstance(f, int))
    if version not in (0, 1):
        raise FunctionError("x509: unsupported private key version")
    return n, d


def _der_sequence(der: bytes) -> list[int | bytes]:
    """The elements of a DER SEQUENCE: INTEGERs as ints, anything else as its bytes."""
    tag, body, rest = _der_element(der)
    if tag != 0x30 or rest:
        raise ValueError("not a DER sequence")
    out: list[int | bytes] = []
    while body:
        tag, value, body = _der_element(body)
        out.append(int.from_bytes(value, "big", signed=True) if tag == 0x02 else value)
    return out


def _der_element(der: bytes) -> tuple[int, bytes, bytes]:
    tag, length, at = der[0], der[1], 2
    if length & 0x80:
        count = length & 0x7F
        length, at = int.from_bytes(der[2 : 2 + count], "big"), 2 + count
    if at + length > len(der):
        raise ValueError("DER element longer than its data")
    return tag, der[at : at + length], der[at + length :]


def table(random: Random | None) -> dict[str, Fn]:
    return {
        "md5": _digest("md5"),
        "sha1": _digest("sha1"),
        "sha256": _digest("sha256"),
        "sha512": _digest("sha512"),
        "bcrypt": _bcrypt(random),
        "rsadecrypt": takes(_rsadecrypt, "ciphertext", "privatekey"),
        "uuidv4": _uuidv4(random),
        "uuidv5": takes(_uuidv5, "namespace", "name"),
    }
