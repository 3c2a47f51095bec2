"""The container images Drover's tests and CI use, built on this machine (no registry is
reachable from it): `python -m deploy.images [name ...]`.

`base` is Debian bookworm from `debootstrap --variant=minbase`, from the mirror apt already
uses, with the host's CA bundle (its `SSL_CERT_FILE`) so HTTPS works inside. Every other image
is a Dockerfile in this folder built on it: `httpd` (a tiny HTTP server), `python` (for
deploy/Dockerfile), `nats` and `postgres` (for the compose stack and testcontainers).

An image is tagged `drover/<name>:local` and labelled with a digest of what it is made of (its
folder's files and its parent image's ID; for the base, the suite, the mirror and the CA
bundle). A build whose image already carries that digest is skipped, so a second run costs
seconds; a changed file or a rebuilt base rebuilds what stands on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUITE = "bookworm"
LABEL = "org.drover.image.digest"
# Inside the images, where the host's CA bundle is, and the variables that point at it.
CA_PATH = "/usr/local/share/drover/ca-bundle.crt"
CA_ENV = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
# Each image and the images it stands on (built first).
PARENTS: dict[str, tuple[str, ...]] = {
    "base": (),
    "httpd": ("base",),
    "python": ("base",),
    "nats": ("base",),
    "postgres": ("base",),
}
LOCK = Path(tempfile.gettempdir()) / "drover-images.lock"


def tag(name: str) -> str:
    return f"drover/{name}:local"


def mirror() -> str:
    """The Debian mirror apt uses on this machine (its main archive, not security's)."""
    out = subprocess.run(
        ["apt-get", "indextargets", "--format", "$(REPO_URI)", "Created-By: Packages"],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    uris = [u for u in dict.fromkeys(out.split()) if "security" not in u]
    return uris[0] if uris else "http://deb.debian.org/debian/"


def ca_bundle() -> Path | None:
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        path = os.environ.get(name)
        if path and Path(path).is_file():
            return Path(path)
    default = Path("/etc/ssl/certs/ca-certificates.crt")
    return default if default.is_file() else None


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def folder_digest(folder: Path, parent_id: str) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    parts = [parent_id.encode()]
    for p in files:
        parts += [str(p.relative_to(folder)).encode(), p.read_bytes(), bytes([p.stat().st_mode & 0o111 != 0])]
    return _digest(*parts)


def base_digest(mirror_uri: str, ca: Path | None) -> str:
    return _digest(SUITE.encode(), b"minbase", mirror_uri.encode(), ca.read_bytes() if ca else b"")


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One builder at a time on this machine (pytest's workers each ask for the images)."""
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class Builder:
    def __init__(self, client: Any, say: Callable[[str], None] = print) -> None:
        self.client = client
        self.say = say

    def _current(self, name: str) -> tuple[str, str] | None:
        """(image ID, digest label) of the image now tagged for `name`, if any."""
        import docker.errors

        try:
            image = self.client.images.get(tag(name))
        except docker.errors.ImageNotFound:
            return None
        return image.id, (image.labels or {}).get(LABEL, "")

    def ensure(self, name: str) -> str:
        """The image `name` (and those it stands on) built unless up to date; its ID."""
        parent_ids = [self.ensure(p) for p in PARENTS[name]]
        if name == "base":
            return self._base()
        folder = HERE / name
        digest = folder_digest(folder, parent_ids[0])
        current = self._current(name)
        if current and current[1] == digest:
            return current[0]
        started = time.monotonic()
        self.say(f"building {tag(name)}")
        image, _ = self.client.images.build(
            path=str(folder), tag=tag(name), labels={LABEL: digest}, buildargs={"BASE": tag("base")},
            rm=True, forcerm=True, pull=False,
        )  # fmt: skip
        self.say(f"built {tag(name)} in {time.monotonic() - started:.1f} s")
        return str(image.id)

    def _base(self) -> str:
        uri, ca = mirror(), ca_bundle()
        digest = base_digest(uri, ca)
        current = self._current("base")
        if current and current[1] == digest:
            return current[0]
        if shutil.which("debootstrap") is None:
            raise RuntimeError("debootstrap is not installed (apt-get install debootstrap)")
        started = time.monotonic()
        self.say(f"building {tag('base')}: debootstrap --variant=minbase {SUITE} {uri}")
        with tempfile.TemporaryDirectory(prefix="drover-base-") as tmp:
            rootfs = Path(tmp) / "rootfs"
            subprocess.run(
                ["debootstrap", "--variant=minbase", SUITE, str(rootfs), uri],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )  # fmt: skip
            changes = [f"LABEL {LABEL}={digest}", 'CMD ["bash"]']
            if ca is not None:
                inside = rootfs / CA_PATH.lstrip("/")
                inside.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(ca, inside)
                changes += [f"ENV {var}={CA_PATH}" for var in CA_ENV]
            # apt inside the image: no recommends, no docs, no prompts.
            apt = rootfs / "etc/apt/apt.conf.d/90drover"
            apt.write_text('APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n')
            changes.append("ENV DEBIAN_FRONTEND=noninteractive")
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            assert tar.stdout is not None
            repo, _, image_tag = tag("base").partition(":")
            self.client.api.import_image_from_stream(
                tar.stdout, repository=repo, tag=image_tag, changes=changes
            )
            if tar.wait() != 0:
                raise RuntimeError("tar of the debootstrap root failed")
        self.say(f"built {tag('base')} in {time.monotonic() - started:.1f} s")
        current = self._current("base")
        assert current is not None
        return current[0]


def ensure(names: Iterable[str], client: Any = None, say: Callable[[str], None] = print) -> dict[str, str]:
    """Build what is missing or stale of `names`; their tags by name."""
    import docker

    client = client or docker.from_env(timeout=600)
    with _locked():
        builder = Builder(client, say)
        for name in names:
            if name not in PARENTS:
                raise KeyError(f"unknown image {name!r} (known: {', '.join(PARENTS)})")
            builder.ensure(name)
    return {name: tag(name) for name in names}
