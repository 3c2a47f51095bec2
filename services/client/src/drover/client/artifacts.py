"""A task's artifacts, fetched into its directory before it starts, as Nomad's artifact hook
fetches them with go-getter (what Drover supports of it):

- sources: `http://` and `https://` (httpx; `headers` sent, `options` other than the ones
  below added to the query, redirects followed), `file://` and plain paths (relative to the
  task's directory), read with the agent's permissions; git, hg, s3 and gcs are refused;
- `options { checksum = "sha256:<hex>" }` (md5, sha1, sha256, sha512, or a bare value told by
  its length) checked on the fetched file, a file already there with it not fetched again;
- archives (tar, tar.gz/tgz, tar.bz2/tbz2, tar.xz/txz, zip) unpacked into the destination, told
  by the source's suffix or `options { archive = "zip" }`, kept whole with `archive = "false"`;
  a gz, bz2 or xz file unpacks only in mode "file". An entry that would land outside the
  destination (an absolute or `..` path, a link out, a device) is refused;
- `mode` "any" (a file lands in the destination directory under the source's name, or
  `options { filename }`), "file" (the destination is the file) or "dir";
- `${...}` in source, destination, options and headers from the task's environment and the
  node; the destination is under the task's directory or the alloc's shared one, never
  outside (an absolute path outside is taken as under the task's directory, as Nomad does).
"""

from __future__ import annotations

import asyncio
import bz2
import gzip
import hashlib
import io
import lzma
import posixpath
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import httpx

from drover.control.client.logs import parse_bool
from drover.control.client.taskenv import replace_env
from drover.model.taskfiles import TaskArtifact

MODE_ANY, MODE_FILE, MODE_DIR = "any", "file", "dir"
# Archive kinds by suffix: how tarfile opens them, or "zip", or a single compressed file.
TARS = {
    "tar": "r:",
    "tar.gz": "r:gz",
    "tgz": "r:gz",
    "tar.bz2": "r:bz2",
    "tbz2": "r:bz2",
    "tar.xz": "r:xz",
    "txz": "r:xz",
}
SINGLE = ("gz", "bz2", "xz")
ARCHIVES = (*TARS, "zip", *SINGLE)
# go-getter's other kinds, refused by name.
UNSUPPORTED_ARCHIVES = ("tar.zst", "tzst", "zst")
CHECKSUM_LENGTHS = {32: "md5", 40: "sha1", 64: "sha256", 128: "sha512"}
_OWN_OPTIONS = ("checksum", "archive", "filename")
# Scheme-less sources go-getter hands to a getter Drover does not have.
_VCS_HOSTS = ("github.com/", "gitlab.com/", "bitbucket.org/", "git@")
_TIMEOUT = httpx.Timeout(1800.0, connect=30.0)


class ArtifactError(Exception):
    pass


@dataclass(frozen=True)
class Fetch:
    """One artifact resolved: what to get, and where."""

    url: str  # an http(s) URL, query included; "" for a local source
    path: Path | None  # a local source
    destination: Path
    mode: str
    archive: str = ""  # a kind of ARCHIVES, "" to keep the file whole
    checksum: tuple[str, bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    insecure: bool = False
    filename: str = ""  # the file's name in mode "any"

    def name(self) -> str:
        return self.filename or posixpath.basename(urlsplit(self.url).path if self.url else str(self.path))


def destination(rel: str, maps: tuple[Mapping[str, str], ...], task_dir: Path, shared_dir: Path) -> Path:
    """Where an artifact lands (Nomad's client path): `rel` interpolated, under the task's
    directory unless it is an absolute path inside the task's or the alloc's shared directory."""
    path = replace_env(rel, *maps)

    def escapes(p: str) -> bool:
        return not any(p == str(d) or p.startswith(f"{d}/") for d in (task_dir, shared_dir))

    if not path.startswith("/") or escapes(posixpath.normpath(path)):
        path = posixpath.join(str(task_dir), path.lstrip("/"))
    path = posixpath.normpath(path)
    if escapes(path):
        raise ArtifactError("artifact destination path escapes alloc directory")
    return Path(path)


def parse_checksum(spec: str) -> tuple[str, bytes]:
    """ "sha256:<hex>" (or a bare hex value, its type told by its length) -> (type, digest)."""
    kind, sep, value = spec.partition(":")
    if not sep:
        kind, value = CHECKSUM_LENGTHS.get(len(spec), ""), spec
        if not kind:
            raise ArtifactError(f"invalid checksum: no type given and {len(spec)} hex digits match none")
    if kind == "file":
        raise ArtifactError("invalid checksum: checksum files (file:<url>) are not supported")
    if kind not in CHECKSUM_LENGTHS.values():
        raise ArtifactError(f"invalid checksum: unsupported checksum type {kind!r}")
    try:
        digest = bytes.fromhex(value)
    except ValueError:
        raise ArtifactError(f"invalid checksum: {value!r} is not hexadecimal") from None
    if len(digest) != hashlib.new(kind).digest_size:
        raise ArtifactError(
            f"invalid checksum: a {kind} digest has {hashlib.new(kind).digest_size * 2} hex digits"
        )
    return kind, digest


def archive_kind(path: str, option: str | None) -> str:
    """The archive kind of a source: `option` ("false" keeps it whole), else its suffix."""
    if option is not None:
        if parse_bool(option) is not None:
            return ""  # "false"; "true" names no kind either, as in go-getter
        kind = option
    else:
        kind = max(
            (k for k in (*ARCHIVES, *UNSUPPORTED_ARCHIVES) if path.endswith(f".{k}")), key=len, default=""
        )
    if kind in UNSUPPORTED_ARCHIVES:
        raise ArtifactError(f"archive type {kind!r} is not supported")
    return kind if kind in ARCHIVES else ""


def resolve(
    art: TaskArtifact, maps: tuple[Mapping[str, str], ...], task_dir: Path, shared_dir: Path
) -> Fetch:
    """An artifact as its task's environment makes it: source, options, headers and destination
    interpolated and checked."""
    source = replace_env(art.getter_source, *maps)
    options = {k: replace_env(v, *maps) for k, v in art.getter_options.items()}
    forced, sep, rest = source.partition("::")
    if sep and "/" not in forced:
        if forced not in ("http", "https", "file"):
            raise ArtifactError(f"download not supported for scheme {forced!r}")
        source = rest
    if source.startswith(_VCS_HOSTS):
        raise ArtifactError("download not supported for scheme 'git'")
    parts = urlsplit(source)
    url, path = "", None
    if parts.scheme in ("http", "https"):
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _OWN_OPTIONS]
        query += [(k, v) for k, v in options.items() if k not in _OWN_OPTIONS]
        url = urlunsplit(parts._replace(query=urlencode(query)))
    elif parts.scheme == "file" or not parts.scheme:
        local = unquote(parts.path) if parts.scheme == "file" else source.split("?", 1)[0]
        path = Path(local) if local.startswith("/") else task_dir / local
    else:
        raise ArtifactError(f"download not supported for scheme {parts.scheme!r}")
    filename = options.get("filename", "")
    if ".." in filename.replace("\\", "/").split("/"):
        raise ArtifactError("filename option contains path traversal")
    return Fetch(
        url=url,
        path=path,
        destination=destination(art.relative_dest, maps, task_dir, shared_dir),
        mode=art.getter_mode or MODE_ANY,
        archive=archive_kind(parts.path if url else str(path), options.get("archive")),
        checksum=parse_checksum(options["checksum"]) if options.get("checksum") else None,
        headers={k: replace_env(v, *maps) for k, v in art.getter_headers.items()},
        insecure=art.getter_insecure,
        filename=filename,
    )


def _digest(path: Path, kind: str) -> bytes:
    h = hashlib.new(kind)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def check_sum(path: Path, checksum: tuple[str, bytes] | None) -> None:
    if checksum is None:
        return
    kind, want = checksum
    got = _digest(path, kind)
    if got != want:
        raise ArtifactError(
            f"checksums did not match for {path.name}: expected {want.hex()}, got {got.hex()}"
        )


async def _download(f: Fetch, to: Path) -> None:
    """The URL's body into `to`, written whole (a temporary file renamed over it)."""
    to.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=to.parent, prefix=".artifact-", delete=False) as tmp:
        try:
            async with (
                httpx.AsyncClient(verify=not f.insecure, follow_redirects=True, timeout=_TIMEOUT) as http,
                http.stream("GET", f.url, headers=f.headers) as r,
            ):
                if not 200 <= r.status_code < 300:
                    raise ArtifactError(f"bad response code: {r.status_code}")
                async for chunk in r.aiter_bytes(1 << 16):
                    tmp.write(chunk)
            tmp.close()
            Path(tmp.name).replace(to)
        except BaseException:
            Path(tmp.name).unlink(missing_ok=True)
            raise


def _copy_local(src: Path, to: Path) -> None:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, to)


async def _get_file(f: Fetch, to: Path) -> None:
    """One file of the source into `to`, its checksum checked (one already there with the
    right checksum is kept)."""
    if f.checksum is not None and to.is_file():
        try:
            await asyncio.to_thread(check_sum, to, f.checksum)
            return
        except ArtifactError:
            pass
    if f.url:
        await _download(f, to)
    else:
        assert f.path is not None
        if not f.path.is_file():
            raise ArtifactError(f"source path {f.path} is not a file")
        await asyncio.to_thread(_copy_local, f.path, to)
    try:
        await asyncio.to_thread(check_sum, to, f.checksum)
    except ArtifactError:
        to.unlink(missing_ok=True)
        raise


async def fetch(f: Fetch, scratch: Path) -> None:
    """Fetch one artifact, as go-getter's client does. `scratch`: a directory for a
    downloaded archive before it is unpacked."""
    if f.archive:
        with tempfile.TemporaryDirectory(dir=scratch, prefix="artifact-") as tmp:
            archive = Path(tmp) / "archive"
            await _get_file(f, archive)
            await asyncio.to_thread(unpack, archive, f.archive, f.destination, f.mode != MODE_FILE)
        return
    if f.mode == MODE_FILE:
        await _get_file(f, f.destination)
    elif f.path is not None and f.path.is_dir() and f.mode in (MODE_ANY, MODE_DIR):
        if f.checksum is not None:
            raise ArtifactError("checksum cannot be specified for directory download")
        await asyncio.to_thread(shutil.copytree, f.path, f.destination, dirs_exist_ok=True)
    elif f.mode == MODE_DIR or (f.url and urlsplit(f.url).path.endswith("/")):
        raise ArtifactError("a directory can be fetched only from a local path or an archive")
    else:
        await _get_file(f, f.destination / f.name())


def unpack(archive: Path, kind: str, dst: Path, into_dir: bool) -> None:
    """Unpack `archive` into the directory `dst` (`into_dir`), or its one file into the file
    `dst`. Entries that would land outside `dst` are refused."""
    if kind in SINGLE:
        if into_dir:
            raise ArtifactError(f"{kind}-compressed files can only unarchive to a single file (mode file)")
        dst.parent.mkdir(parents=True, exist_ok=True)
        with _decompressed(archive, kind) as src:
            _write(src, dst)
        return
    try:
        if kind == "zip":
            _unzip(archive, dst, into_dir)
        else:
            _untar(archive, TARS[kind], dst, into_dir)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, lzma.LZMAError) as e:
        raise ArtifactError(f"cannot unpack the {kind} archive: {e}") from None


def _decompressed(archive: Path, kind: str) -> io.BufferedIOBase:
    if kind == "gz":
        return gzip.GzipFile(archive, "rb")
    return bz2.BZ2File(archive, "rb") if kind == "bz2" else lzma.LZMAFile(archive, "rb")


def _untar(archive: Path, mode: str, dst: Path, into_dir: bool) -> None:
    with tarfile.open(archive, mode) as tf:  # type: ignore[call-overload]
        members = tf.getmembers()
        if not members:
            raise ArtifactError("empty archive")
        if into_dir:
            dst.mkdir(parents=True, exist_ok=True)
            try:
                tf.extractall(dst, filter="data")
            except tarfile.FilterError as e:
                raise ArtifactError(f"refused archive entry: {e}") from None
            return
        files = [m for m in members if m.isfile()]
        if len(files) != 1 or len(members) != 1:
            raise ArtifactError("expected a single file in the archive (mode file)")
        src = tf.extractfile(files[0])
        assert src is not None
        _write(src, dst)


def _unzip(archive: Path, dst: Path, into_dir: bool) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        if not infos:
            raise ArtifactError("empty archive")
        for info in infos:
            parts = info.filename.replace("\\", "/").split("/")
            if info.filename.startswith(("/", "\\")) or ".." in parts:
                raise ArtifactError(f"refused archive entry {info.filename!r}: outside the destination")
        if into_dir:
            dst.mkdir(parents=True, exist_ok=True)
            zf.extractall(dst)
            return
        if len(infos) != 1 or infos[0].is_dir():
            raise ArtifactError("expected a single file in the archive (mode file)")
        with zf.open(infos[0]) as src:
            _write(src, dst)


def _write(src: io.BufferedIOBase | IO[bytes], dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "wb") as out:
        shutil.copyfileobj(src, out)
