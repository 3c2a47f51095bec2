"""Errors as Nomad answers them: plain text, with the status saying whose fault it is. A
refused request lists every problem, one per line, and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse
from psycopg import OperationalError as PsycopgOperationalError
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from drover.control.errors import CommandError, Conflict, Forbidden, Invalid, NotFound

# How a type problem reads: "<field> must be <words>".
_MUST_BE = {
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a JSON object",
    "model_type": "a JSON object",
    "model_attributes_type": "a JSON object",
}
_NOT_AN_OBJECT = {"missing", "dict_type", "model_type", "model_attributes_type"}
_STATUS: dict[type[CommandError], int] = {Invalid: 400, NotFound: 404, Conflict: 409, Forbidden: 403}


class ApiError(HTTPException):
    """A request refused by the HTTP layer itself (its query, its body's JSON)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.message = message


def _got(error: dict[str, Any]) -> str:
    value = error.get("input")
    if isinstance(value, (str, int, float, bool)):
        text = repr(value)
        return f" (got {text[:60] + '...' if len(text) > 60 else text})"
    return ""


def problems(errors: Sequence[Any]) -> list[str]:
    """Validation errors as lines an operator reads: `Job.TaskGroups.0.Count must be an
    integer (got 'many')`; a query parameter's named as such."""
    out = []
    for e in errors:
        where, *path = (str(p) for p in e["loc"])
        kind = e["type"]
        if where == "body" and not path and kind in _NOT_AN_OBJECT:
            out.append("Request must be a JSON object")
            continue
        prefix = "query parameter " if where == "query" else ""
        if kind == "missing":
            parent = ".".join(path[:-1])
            out.append(f'{prefix}{parent + ": " if parent else ""}"{path[-1]}" is required')
        elif kind in _MUST_BE:
            out.append(f"{prefix}{'.'.join(path)} must be {_MUST_BE[kind]}{_got(e)}")
        elif kind == "literal_error":
            out.append(f"{prefix}{'.'.join(path)} must be {e['ctx']['expected']}{_got(e)}")
        elif kind == "value_error":  # a validator's own words
            out.append(f"{prefix}{'.'.join(path)}: {e['msg'].removeprefix('Value error, ')}{_got(e)}")
        else:
            out.append(f"{prefix}{'.'.join(path)}: {e['msg']}{_got(e)}")
    return out


def _text(status: int, message: str) -> Response:
    return PlainTextResponse(message, status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return _text(exc.status_code, str(exc.detail))


async def _invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return _text(400, "\n".join(problems(exc.errors())))


def status_of(exc: CommandError) -> int:
    """The HTTP status a command's refusal is answered with."""
    return _STATUS.get(type(exc), 400)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CommandError)
    return _text(status_of(exc), exc.message)


async def _unreachable(request: Request, exc: Exception) -> Response:
    """PostgreSQL down (or restarting): 503 naming it, so a client retries instead of reading a
    bare 500. Nothing was written: an append commits whole or not at all. The driver's first
    line names the host, never the password."""
    cause = getattr(exc, "orig", None) or exc
    first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    response = _text(503, f"PostgreSQL unreachable: {first}")
    response.headers["Retry-After"] = "1"
    return response


def install(app: FastAPI) -> None:
    """Answer every refusal in plain text: the HTTP layer's, a request's validation (400, not
    FastAPI's 422, as Nomad answers), a command's, and PostgreSQL out of reach (503)."""
    app.add_exception_handler(OperationalError, _unreachable)
    app.add_exception_handler(PsycopgOperationalError, _unreachable)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(CommandError, _refused)
