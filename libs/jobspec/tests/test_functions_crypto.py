"""The crypto functions behave as Nomad's (table-driven): hashes of the UTF-8 text, bcrypt with
a salt and uuidv4 from the randomness the caller hands in (refused without it), rsadecrypt of
PKCS #1 v1.5 ciphertext with a PKCS #1 key, uuidv5 by namespace name or UUID."""

from __future__ import annotations

import base64
import json
from typing import Any

import bcrypt
import pytest

# A key made for this test alone, and "secret message" encrypted to it (PKCS #1 v1.5).
KEY = json.dumps(
    """-----BEGIN RSA PRIVATE KEY-----
MIICXQIBAAKBgQC1X4artS6Rh95yXwHE+J8llAeCALFcTElSewbkctahTA/tn7aH
kZnREor6WvcaZpBlPzbYdtLxEmSzqX+UACX5FkEHmFOrRhbcyNqXUmzKH8QseroX
n6ONcvhvdiNH+Ai7ai7tl98h5Yczx2MpnyI0BTBkKKc7ugr9j4nJ5kwgiwIDAQAB
AoGAGtpczvlRPry2A4rrcSU6Ms8a2XWOzNKCnJKYb6RNAK6JQS4/UQ0Oj/TF3NEw
+piq0kKstRnKm2SUwkDbIadv95Qx1mDc/MwWtFG02zlC1DakrrZOYaZyKDzvxtFt
WTdfXkWvtebwYm1/vIbmBwvypETvJbvRrhyQbtVeSZ4L47ECQQDbbJtSu/zj1i4e
54qjtL6vEdDQmBq87rOuUzfXZaXqpCg8IEBrYw4O9QFAkgj1ZhYX79Q0QLcGBdNE
lrMwRo6TAkEA05suisl52iBgxMbin7tNwZCu57Wob63XSR30fq4nvs6etUYRBL5R
KB5R6Aaby8BipA2ZFZSBveZP8ojyqYdpKQJBAIO3rYG7wXJPhv4cRjhBbtoPGset
FxflPs1dvT67ER9KjbCSN7l/C9hksOy+/Uu6jXavDDaVxoiCBLG+uTA4mqsCQHol
S5plbmcQ5Yrw2wQlFF81ayDpZU8B5BGarvUpBlxH3Kj6xvwb97DWv6TVm7zjUo0s
JD+mt7Wsal2v25MsTPECQQCcV38Wd/xlAB7hCJ/vFlvYoYbmYyltLzcp1lTevHgr
Kz1QQSZmQ9SAR51Barvd2/QbEjtxyVcOcE8BFYZgI8iD
-----END RSA PRIVATE KEY-----
"""
)
CIPHERTEXT = "XKGROQoBrnB1LtBc0CGw6gxwPJYLUFOlFuLG3IoEAiXY2pQpe8n6nw2WFJYGbBHtClhJFTwAIooNDujfGPl2NyjSxz4p26xrMn060hGHYHJTAVW8/YilicT68EaFaUbHJJgwGLDKGge/t0pFLRLnA7lf25Zo0f++WfWhIXBTw58="
# The DER of a PKCS #8 key's outline: a key in a format Nomad's rsadecrypt does not take.
PKCS8 = json.dumps(
    "-----BEGIN PRIVATE KEY-----\n"
    + base64.b64encode(bytes.fromhex("300a020100300004030102ff")).decode()
    + "\n-----END PRIVATE KEY-----\n"
)

CASES = [
    ('md5("hello world")', "5eb63bbbe01eeed093cb22bb8f5acdc3"),
    ('sha1("hello world")', "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed"),
    (
        'sha256("hello world")',
        "b94d27b9934d3e08a5c7b7d39b7a0b95b6f9b34ac2d46c6d3a13b3ce1e3c8b3b"[:0]
        + "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    ),
    (
        'sha512("")',
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
        "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
    ),
    (f'rsadecrypt("{CIPHERTEXT}", {KEY})', "secret message"),
    ("uuidv4()", "00010203-0405-4607-8809-0a0b0c0d0e0f"),  # the bytes 0, 1, 2... handed in
    ('uuidv5("dns", "example.com")', "cfbff0d1-9375-5685-968c-48ce8b15ae17"),
    ('uuidv5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "example.com")', "cfbff0d1-9375-5685-968c-48ce8b15ae17"),
    ('uuidv5("url", "https://www.example.com/")', "3d3ed9d2-aa3d-5fa6-90e8-ed662e90f559"),
]

ERRORS = [
    ('bcrypt("hello", 32)', "cost 32 is outside the range 4 to 31"),
    ('bcrypt("hello", 5, 6)', "takes no more than two arguments"),
    (f'bcrypt("{"x" * 73}")', "password length exceeds 72 bytes"),
    (f'rsadecrypt("!!", {KEY})', "cipher text must be base64-encoded"),
    (f'rsadecrypt("{CIPHERTEXT}", "no key")', "failed to parse key: no key found"),
    (f'rsadecrypt("{CIPHERTEXT}", {PKCS8})', "use ParsePKCS8PrivateKey instead"),
    (f'rsadecrypt("{base64.b64encode(bytes(128)).decode()}", {KEY})', "crypto/rsa: decryption error"),
    ('uuidv5("nope", "x")', "doesn't support namespace nope"),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0][:60] for c in CASES])
def test_crypto_function(hcl: Any, expr: str, expected: Any) -> None:
    hcl.check(expr, expected)


@pytest.mark.parametrize(("expr", "message"), ERRORS, ids=[e[0][:60] for e in ERRORS])
def test_crypto_function_error(hcl: Any, expr: str, message: str) -> None:
    assert message in hcl.error(expr)


def test_bcrypt_salts_with_the_randomness_handed_in(hcl: Any) -> None:
    # Go's bcrypt: version 2a, cost 10 unless given (under 4 is 10), 16 random bytes of salt.
    hashed = hcl.value('bcrypt("hello")')
    assert hashed.startswith("$2a$10$..CA.uOD/eaGAOmJB.yMBu")  # bytes 0 to 15, bcrypt's base64
    assert bcrypt.checkpw(b"hello", hashed.encode())
    assert hcl.value('bcrypt("hello", 5)').startswith("$2a$05$")
    assert hcl.value('bcrypt("hello", 2)').startswith("$2a$10$")


def test_randomness_is_refused_when_none_is_handed_in(sealed: Any) -> None:
    assert "needs randomness" in sealed.error("uuidv4()")
    assert "needs randomness" in sealed.error('bcrypt("x")')
    assert sealed.value('uuidv5("dns", "example.com")') == "cfbff0d1-9375-5685-968c-48ce8b15ae17"
