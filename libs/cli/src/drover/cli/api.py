"""The CLI's HTTP client of Drover's API (Nomad's paths): the few calls the commands make, each
answer's JSON, and the API's refusals as `ApiError` carrying its plain-text message. Every
request carries the ACL token (`-token`, else NOMAD_TOKEN or DROVER_TOKEN) as X-Nomad-Token."""

from __future__ import annotations

import os
import ssl
from typing import Any
from urllib.parse import quote

import httpx

from drover.runtime.tls import client_tls_options

DEFAULT_ADDRESS = "http://127.0.0.1:4646"
# How long a blocking query waits on the server; the client waits that and a margin.
BLOCKING_WAIT = 30.0
_MARGIN = 15.0


# The token the global `-token` names (drover.cli.main), before the environment's.
_token: str | None = None
TOKEN_ENV = ("DROVER_TOKEN", "NOMAD_TOKEN")


def set_token(token: str) -> None:
    global _token
    _token = token


def token() -> str:
    """The ACL token the verbs send ("" for none: the anonymous token)."""
    if _token is not None:
        return _token
    return next((os.environ[k] for k in TOKEN_ENV if os.environ.get(k)), "")


def auth_headers() -> dict[str, str]:
    """The headers that carry the token (none without one), as Nomad's CLI sends it."""
    secret = token().strip()
    return {"X-Nomad-Token": secret} if secret else {}


def seg(value: str) -> str:
    """A path segment: an ID quoted whole (a job ID may hold characters a URL reserves)."""
    return quote(value, safe="")


def tls_options(address: str) -> dict[str, Any]:
    """An https address's TLS, as Nomad's CLI sets it up from NOMAD_CACERT, NOMAD_CLIENT_CERT,
    NOMAD_CLIENT_KEY and NOMAD_SKIP_VERIFY (drover.runtime.tls); nothing for plain HTTP."""
    try:
        return client_tls_options(address, os.environ)
    except (OSError, ssl.SSLError) as e:  # a file missing, or not a certificate or key
        raise ApiError(
            0, f"TLS setup for {address} failed (NOMAD_CACERT, NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY): {e}"
        ) from e


class ApiError(Exception):
    """The API refused a request (`status` its HTTP status) or could not be reached (0)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Client:
    """Calls to the API at `address`, in `namespace`."""

    def __init__(self, address: str, namespace: str = "default") -> None:
        self.address = address.rstrip("/")
        self.namespace = namespace
        self.http = httpx.Client(
            base_url=self.address,
            timeout=httpx.Timeout(30.0, read=BLOCKING_WAIT + _MARGIN),
            headers=auth_headers(),
            **tls_options(self.address),
        )

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, body: Any = None, **params: Any) -> tuple[Any, int]:
        """(the answer's JSON, its X-Nomad-Index or 0)."""
        try:
            r = self.http.request(method, path, json=body, params={"namespace": self.namespace, **params})
        except httpx.TransportError as e:
            raise ApiError(0, f"can't reach the API at {self.address}: {e or type(e).__name__}") from e
        if not 200 <= r.status_code < 300:  # a purge answers 204
            raise ApiError(r.status_code, r.text.strip() or f"{r.status_code} {r.reason_phrase}")
        return (r.json() if r.content else None), int(r.headers.get("X-Nomad-Index", 0))

    # --- any path: what the verbs read and write ---
    def get(self, path: str, **params: Any) -> Any:
        return self._call("GET", path, **params)[0]

    def get_indexed(self, path: str, index: int = 0, **params: Any) -> tuple[Any, int]:
        """The answer and its index; given an index, a blocking query (it answers once what it
        reads changed after `index`, or after BLOCKING_WAIT)."""
        if index:
            params |= {"index": index, "wait": f"{BLOCKING_WAIT:g}s"}
        return self._call("GET", path, **params)

    def put(self, path: str, body: Any = None, **params: Any) -> Any:
        return self._call("PUT", path, body, **params)[0]

    def post(self, path: str, body: Any = None, **params: Any) -> Any:
        return self._call("POST", path, body, **params)[0]

    def delete(self, path: str, **params: Any) -> Any:
        return self._call("DELETE", path, **params)[0]

    def text(self, path: str, **params: Any) -> str:
        """A read answered in plain text (the leader's address, the metrics in Prometheus')."""
        try:
            r = self.http.get(path, params={"namespace": self.namespace, **params})
        except httpx.TransportError as e:
            raise ApiError(0, f"can't reach the API at {self.address}: {e or type(e).__name__}") from e
        if r.status_code != 200:
            raise ApiError(r.status_code, r.text.strip() or f"{r.status_code} {r.reason_phrase}")
        return r.text

    # --- jobs ---
    def jobs(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/v1/jobs")[0])

    def job_allocs(self, job_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/v1/job/{seg(job_id)}/allocations")[0])

    # --- restarts ---
    def start_restart(self, job_id: str, body: dict[str, Any]) -> str:
        """Start restarting the job; the restart's ID."""
        return str(self._call("POST", f"/v1/job/{seg(job_id)}/restart", body)[0]["RestartID"])

    def restarts(self, job_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/v1/job/{seg(job_id)}/restarts")[0])

    def restart(self, job_id: str, restart_id: str, index: int = 0) -> tuple[dict[str, Any], int]:
        """The restart and the index it was read at; given an index, a blocking query: it answers
        once the restart changed after `index` (or BLOCKING_WAIT passed)."""
        params = {"index": index, "wait": f"{BLOCKING_WAIT:g}s"} if index else {}
        doc, at = self._call("GET", f"/v1/job/{seg(job_id)}/restart/{seg(restart_id)}", **params)
        return doc, at

    def pause_restart(self, job_id: str, restart_id: str) -> None:
        self._call("POST", f"/v1/job/{seg(job_id)}/restart/{seg(restart_id)}/pause")

    def resume_restart(self, job_id: str, restart_id: str) -> None:
        self._call("POST", f"/v1/job/{seg(job_id)}/restart/{seg(restart_id)}/resume")

    def cancel_restart(self, job_id: str, restart_id: str) -> None:
        self._call("DELETE", f"/v1/job/{seg(job_id)}/restart/{seg(restart_id)}")
