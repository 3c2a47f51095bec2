"""HTTPS for the API, as Nomad's `tls` block sets it up: the server's certificate and key
(DROVER_TLS_CERT_FILE, DROVER_TLS_KEY_FILE), the CA its clients' certificates are checked
against (DROVER_TLS_CA_FILE), and whether a client must present one (DROVER_VERIFY_HTTPS_CLIENT);
and the client side as Nomad's CLI reads it from the environment: NOMAD_ADDR=https://...,
NOMAD_CACERT, NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY, NOMAD_SKIP_VERIFY (the CLI, the agent and
drover sim alike)."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drover.runtime.settings import Settings

_TRUE = {"1", "t", "true", "yes", "on"}


def server_tls_problems(settings: Settings) -> list[str]:
    """What is wrong with the API's TLS settings (nothing when TLS is off)."""
    problems = []
    if bool(settings.tls_cert_file) != bool(settings.tls_key_file):
        problems.append("DROVER_TLS_CERT_FILE and DROVER_TLS_KEY_FILE go together")
    if settings.verify_https_client and not (settings.tls_cert_file and settings.tls_ca_file):
        problems.append(
            "DROVER_VERIFY_HTTPS_CLIENT needs HTTPS (a certificate and key) and DROVER_TLS_CA_FILE"
        )
    return problems


def uvicorn_tls_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's SSL options for the API ({} for plain HTTP): with verify_https_client, a
    client without a certificate from the CA is refused in the handshake (mutual TLS)."""
    if not settings.tls_cert_file:
        return {}
    options: dict[str, Any] = {"ssl_certfile": settings.tls_cert_file, "ssl_keyfile": settings.tls_key_file}
    if settings.tls_ca_file:
        options["ssl_ca_certs"] = settings.tls_ca_file
    options["ssl_cert_reqs"] = ssl.CERT_REQUIRED if settings.verify_https_client else ssl.CERT_NONE
    return options


@dataclass(frozen=True)
class ClientTLS:
    """How an HTTP client of the API sets up TLS, from Nomad's environment variables."""

    ca_cert: str = ""
    client_cert: str = ""
    client_key: str = ""
    skip_verify: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ClientTLS:
        return cls(
            ca_cert=environ.get("NOMAD_CACERT", ""),
            client_cert=environ.get("NOMAD_CLIENT_CERT", ""),
            client_key=environ.get("NOMAD_CLIENT_KEY", ""),
            skip_verify=environ.get("NOMAD_SKIP_VERIFY", "").strip().lower() in _TRUE,
        )

    def context(self) -> ssl.SSLContext:
        """The SSL context (httpx's `verify`): the system's CAs, or NOMAD_CACERT's; the client
        certificate if given; no verification with NOMAD_SKIP_VERIFY."""
        ctx = ssl.create_default_context(cafile=self.ca_cert or None)
        if self.client_cert:
            ctx.load_cert_chain(self.client_cert, self.client_key or None)
        if self.skip_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def httpx_options(self) -> dict[str, Any]:
        """What an httpx client is made with (its `verify`)."""
        return {"verify": self.context()}


def client_tls_options(address: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The httpx options of a client of the API at `address`, its TLS set up from Nomad's
    environment variables; nothing for plain HTTP."""
    if not address.lower().startswith("https://"):
        return {}
    return ClientTLS.from_env(environ).httpx_options()
