"""HTTPS for the API (Nomad's tls block: DROVER_TLS_CERT_FILE, DROVER_TLS_KEY_FILE,
DROVER_TLS_CA_FILE, DROVER_VERIFY_HTTPS_CLIENT), with a CA, a server and a client certificate
made here: the API answers HTTPS alone; with verify_https_client, a client without a
certificate from the CA is refused in the handshake; the CLI reaches it with NOMAD_CACERT
(and NOMAD_CLIENT_CERT / NOMAD_CLIENT_KEY), and drover sim's nodes register and beat through it."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from drover.runtime.embedded import free_port, wait_for_port

from .prefork import Process, run_drover, spawn

pytestmark = pytest.mark.cluster  # the API as a process


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _issue(
    ca_key: ec.EllipticCurvePrivateKey | None,
    issuer: x509.Name,
    cn: str,
    dir: Path,
    stem: str,
    *,
    server: bool,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer if issuer is not None else _name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if ca_key is None:  # the CA itself
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        ).add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key or key, hashes.SHA256())
    (dir / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, dir / f"{stem}-key.pem")
    return key, cert


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.pem, server.pem (127.0.0.1, localhost) and client.pem, each with its -key.pem."""
    d = tmp_path_factory.mktemp("certs")
    ca_key, ca = _issue(None, None, "Drover test CA", d, "ca", server=False)
    _issue(ca_key, ca.subject, "server.global.nomad", d, "server", server=True)
    _issue(ca_key, ca.subject, "cli.global.nomad", d, "client", server=False)
    return d


def _api(database_url: str, nats_url: str, log_dir: Path, certs: Path, **tls: str) -> tuple[Process, int]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k != "PGPASSWORD"},
        "DROVER_DATABASE_URL": database_url,
        "DROVER_NATS_URL": nats_url,
        "DROVER_API_PORT": str(port),
        "DROVER_KEYRING": str(log_dir / "keyring.json"),
        "DROVER_HEARTBEAT_MIN_TTL": "2",  # the simulated nodes beat within the test's seconds
        "DROVER_TLS_CERT_FILE": str(certs / "server.pem"),
        "DROVER_TLS_KEY_FILE": str(certs / "server-key.pem"),
        **tls,
    }
    proc = spawn("drover.api", [], env, log_dir / f"api-{port}.log")
    wait_for_port(port, 60, proc=proc)
    return proc, port


@pytest.fixture
def https_api(database_url: str, nats_url: str, tmp_path: Path, certs: Path) -> Iterator[int]:
    proc, port = _api(database_url, nats_url, tmp_path, certs)
    yield port
    proc.terminate()
    proc.wait()


@pytest.fixture
def mtls_api(database_url: str, nats_url: str, tmp_path: Path, certs: Path) -> Iterator[int]:
    proc, port = _api(
        database_url, nats_url, tmp_path, certs,
        DROVER_TLS_CA_FILE=str(certs / "ca.pem"), DROVER_VERIFY_HTTPS_CLIENT="true",
    )  # fmt: skip
    yield port
    proc.terminate()
    proc.wait()


def _context(certs: Path, client: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if client:
        ctx.load_cert_chain(certs / "client.pem", certs / "client-key.pem")
    return ctx


def _drover(port: int, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NOMAD_", "DROVER_ADDR"))}
    p = run_drover(list(args), {**base, "NOMAD_ADDR": f"https://127.0.0.1:{port}", **env}, 60)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def test_the_api_answers_https_and_the_cli_verifies_it_with_nomad_cacert(https_api: int, certs: Path) -> None:
    url = f"https://127.0.0.1:{https_api}"
    with httpx.Client(base_url=url, verify=_context(certs)) as h:
        assert h.get("/v1/jobs").json() == []
    with (
        httpx.Client(base_url=url, verify=ssl.create_default_context()) as h,
        pytest.raises(httpx.ConnectError),
    ):
        h.get("/v1/jobs")  # a CA the system does not know
    with httpx.Client(base_url=f"http://127.0.0.1:{https_api}") as h, pytest.raises(httpx.HTTPError):
        h.get("/v1/jobs")  # plain HTTP is not answered
    ok = _drover(https_api, "job", "status", NOMAD_CACERT=str(certs / "ca.pem"))
    assert ok.returncode == 0 and "No running jobs" in ok.stdout, ok.stdout + ok.stderr
    refused = _drover(https_api, "job", "status")
    assert refused.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr + refused.stdout
    skipped = _drover(https_api, "job", "status", NOMAD_SKIP_VERIFY="true")
    assert skipped.returncode == 0, skipped.stderr
    missing = _drover(https_api, "job", "status", NOMAD_CACERT=str(certs / "nope.pem"))
    assert missing.returncode == 1 and "NOMAD_CACERT" in missing.stderr + missing.stdout


def test_verify_https_client_refuses_a_client_without_a_certificate(mtls_api: int, certs: Path) -> None:
    url = f"https://127.0.0.1:{mtls_api}"
    with httpx.Client(base_url=url, verify=_context(certs)) as h, pytest.raises(httpx.HTTPError):
        h.get("/v1/jobs")
    with httpx.Client(base_url=url, verify=_context(certs, client=True)) as h:
        assert h.get("/v1/jobs").status_code == 200
    cacert = {"NOMAD_CACERT": str(certs / "ca.pem")}
    assert _drover(mtls_api, "job", "status", **cacert).returncode == 1
    with_cert = _drover(
        mtls_api, "job", "status", **cacert,
        NOMAD_CLIENT_CERT=str(certs / "client.pem"), NOMAD_CLIENT_KEY=str(certs / "client-key.pem"),
    )  # fmt: skip
    assert with_cert.returncode == 0, with_cert.stdout + with_cert.stderr


def test_simulated_nodes_register_and_beat_through_https(mtls_api: int, certs: Path, tmp_path: Path) -> None:
    """drover sim (the agent's client alike) reaches an https API with Nomad's variables."""
    stats = tmp_path / "sim.json"
    env: dict[str, Any] = {
        **os.environ,
        "NOMAD_CACERT": str(certs / "ca.pem"),
        "NOMAD_CLIENT_CERT": str(certs / "client.pem"),
        "NOMAD_CLIENT_KEY": str(certs / "client-key.pem"),
    }
    sim = subprocess.run(
        [sys.executable, "-m", "drover.client.sim", "--api", f"https://127.0.0.1:{mtls_api}", "--nodes", "3",
         "--duration", "5", "--stats", str(stats), "--data-dir", str(tmp_path / "sim")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert sim.returncode == 0, sim.stdout + sim.stderr
    report = json.loads(stats.read_text())
    assert report["nodes"] == 3 and report["heartbeats"] >= 3 and report["heartbeat_errors"] == 0, report
    with httpx.Client(base_url=f"https://127.0.0.1:{mtls_api}", verify=_context(certs, client=True)) as h:
        assert sorted(n["ID"] for n in h.get("/v1/nodes").json()) == ["sim-00000", "sim-00001", "sim-00002"]
