"""Request bodies: JSON decoded once, checked, and handed to FastAPI to validate against the
route's request model.

Decoding refuses (400) what Python's JSON decoder allows but no stored document may hold - a
NUL character or a lone surrogate in a string, NaN or an infinite number, an integer outside 64
bits (Nomad's decoder refuses those too), nesting deeper than MAX_DEPTH (a deeply nested body
would otherwise fail deep inside the decoder, the validator or Postgres) - and drops every null
object member: `nomad job run -output` writes null for every unset block, and null means
"the default"."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from drover.api.errors import ApiError

MAX_DEPTH = 64
# Where the ACL check leaves a body it decoded (a job's namespace).
_DECODED = "drover.json"
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
# Markers in the raw text of what decoding must look into; a body without any is taken as is.
_ESCAPES = (b"\\u0000", b"\\ud8", b"\\ud9", b"\\uda", b"\\udb", b"\\udc", b"\\udd", b"\\ude", b"\\udf")


def _bad_text(s: str) -> str:
    if "\x00" in s:
        return "holds a NUL character"
    if not s.isascii():
        try:
            s.encode()
        except UnicodeEncodeError:
            return "holds a lone surrogate"
    return ""


def _clean(value: Any, path: str, depth: int, problems: list[str]) -> Any:
    """`value` without null object members; what it may not hold goes to `problems`."""
    if depth > MAX_DEPTH:
        raise ApiError(400, f"Request body nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if why := _bad_text(k):
                problems.append(f"{path}: a key {why}")
            if v is not None:
                out[k] = _clean(v, f"{path}.{k}" if path else k, depth + 1, problems)
        return out
    if isinstance(value, list):
        return [_clean(v, f"{path}.{i}", depth + 1, problems) for i, v in enumerate(value)]
    if isinstance(value, str) and (why := _bad_text(value)):
        problems.append(f"{path or 'Request'} {why}")
    return value


def _int(text: str) -> int:
    value = int(text)
    if len(text) > 18 and not INT_MIN <= value <= INT_MAX:
        raise ApiError(400, f"Malformed JSON: {text} is outside the range of a 64-bit integer")
    return value


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ApiError(400, f"Malformed JSON: {text} is too large a number")
    return value


def _constant(text: str) -> Any:
    raise ApiError(400, f"Malformed JSON: {text} is not a JSON value")


def _needs_cleaning(raw: bytes) -> bool:
    lowered = raw.lower()
    return (
        b"null" in raw or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH or any(e in lowered for e in _ESCAPES)
    )


def decode(raw: bytes) -> Any:
    """The body's JSON, checked and without null object members (see the module notes)."""
    try:
        data = json.loads(raw, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise ApiError(400, f"Request body nests deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiError(400, f"Malformed JSON: {e}") from e
    if not _needs_cleaning(raw):
        return data
    problems: list[str] = []
    data = _clean(data, "", 0, problems)
    if problems:
        raise ApiError(400, "\n".join(problems))
    return data


class JsonRequest(Request):
    """A request whose `json()` is `decode`, bounded by the body limit (a body sent without a
    Content-Length is measured here)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json") and _DECODED in self.scope:
            self._json = self.scope[_DECODED]  # decoded by the ACL check (drover.api.aclguard)
        if not hasattr(self, "_json"):
            raw = await self.body()
            if len(raw) > self.app.state.settings.max_body_bytes:
                raise ApiError(413, "Request body too large")
            self._json = decode(raw)
        return self._json


class JsonRoute(APIRoute):
    """Routes whose request bodies are decoded by `decode` (the request's content type is
    JSON already: drover.api.guard)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def route(request: Request) -> Response:
            return await handler(JsonRequest(request.scope, request.receive))

        return route
