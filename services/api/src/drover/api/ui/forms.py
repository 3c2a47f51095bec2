"""The console's forms: `application/x-www-form-urlencoded` bodies (its only kind: no uploads),
read with the standard library rather than python-multipart, once per request."""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import Request

from drover.api.errors import ApiError


async def fields(request: Request) -> dict[str, str]:
    """The posted form's fields (the last value of a repeated one)."""
    cached: dict[str, str] | None = request.state.__dict__.get("form_fields")
    if cached is not None:
        return cached
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    body = await request.body()
    if body and kind != "application/x-www-form-urlencoded":
        raise ApiError(415, "a form is posted as application/x-www-form-urlencoded")
    try:
        parsed = dict(parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=False))
    except UnicodeDecodeError as e:
        raise ApiError(400, "the form is not UTF-8") from e
    request.state.form_fields = parsed
    return parsed


def flag(value: str) -> bool:
    return value.lower() in ("true", "1", "on", "yes")
