"""Artifacts as Nomad's artifact hook fetches them (drover.client.artifacts): how a source,
its options and destination resolve (table-driven), checksums, archives unpacked with
entries outside the destination refused, and real fetches from files and an HTTP server."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from drover.client.artifacts import (
    ArtifactError,
    archive_kind,
    destination,
    fetch,
    parse_checksum,
    resolve,
    unpack,
)
from drover.model.canonical_blocks import artifact as canonical
from drover.model.taskfiles import TaskArtifact

TASK = Path("/data/allocs/a1/web")
SHARED = Path("/data/allocs/a1/alloc")
ENV = ({"NOMAD_TASK_DIR": "/data/allocs/a1/web/local", "NOMAD_ALLOC_DIR": str(SHARED), "V": "1.2"},)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("local/", TASK / "local"),
        ("local/bin", TASK / "local/bin"),
        ("${NOMAD_TASK_DIR}/x", TASK / "local/x"),
        ("${NOMAD_ALLOC_DIR}/data", SHARED / "data"),  # the shared alloc dir is allowed
        ("/etc/app", TASK / "etc/app"),  # an absolute path outside is taken under the task dir
        ("local/../secrets", TASK / "secrets"),
        ("../alloc/data", SHARED / "data"),
    ],
)
def test_destinations_stay_in_the_task_or_shared_alloc_dir(rel: str, expected: Path) -> None:
    assert destination(rel, ENV, TASK, SHARED) == expected


@pytest.mark.parametrize("rel", ["../../etc", "../other-task/local", "local/../../../x"])
def test_destinations_that_escape_are_refused(rel: str) -> None:
    with pytest.raises(ArtifactError, match="escapes alloc directory"):
        destination(rel, ENV, TASK, SHARED)


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("sha256:" + "ab" * 32, "sha256"),
        ("md5:" + "0f" * 16, "md5"),
        ("sha1:" + "00" * 20, "sha1"),
        ("sha512:" + "ff" * 64, "sha512"),
        ("ab" * 32, "sha256"),  # told by its length
        ("0f" * 16, "md5"),
    ],
)
def test_checksums_parse(spec: str, kind: str) -> None:
    assert parse_checksum(spec)[0] == kind


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("sha256:zz", "not hexadecimal"),
        ("sha256:abcd", "64 hex digits"),
        ("crc32:abcd", "unsupported checksum type"),
        ("file:https://example.com/SHA256SUMS", "not supported"),
        ("abc", "no type given"),
    ],
)
def test_bad_checksums_are_refused(spec: str, problem: str) -> None:
    with pytest.raises(ArtifactError, match=problem):
        parse_checksum(spec)


@pytest.mark.parametrize(
    ("path", "option", "kind"),
    [
        ("/x/app.tar.gz", None, "tar.gz"),
        ("/x/app.tgz", None, "tgz"),
        ("/x/app.tar", None, "tar"),
        ("/x/app.zip", None, "zip"),
        ("/x/app.txt.gz", None, "gz"),
        ("/x/app.tar.bz2", None, "tar.bz2"),
        ("/x/app.bin", None, ""),
        ("/x/app.tar.gz", "false", ""),  # kept whole
        ("/x/download", "zip", "zip"),  # named by the option
        ("/x/app.tar.gz", "true", ""),  # "true" names no kind, as in go-getter
    ],
)
def test_archive_kinds(path: str, option: str | None, kind: str) -> None:
    assert archive_kind(path, option) == kind


def test_zstd_archives_are_refused_by_name() -> None:
    with pytest.raises(ArtifactError, match=r"'tar\.zst' is not supported"):
        archive_kind("/x/a.tar.zst", None)


def art(source: str, **kw: object) -> TaskArtifact:
    return canonical(TaskArtifact(getter_source=source, **kw))  # type: ignore[arg-type]


def test_sources_resolve_as_go_getter_reads_them() -> None:
    f = resolve(
        art(
            "https://example.com/app-${V}.tar.gz?x=1",
            getter_options={"checksum": "md5:" + "00" * 16, "region": "eu"},
            getter_headers={"Authorization": "Bearer ${V}"},
        ),
        ENV,
        TASK,
        SHARED,
    )
    assert f.url == "https://example.com/app-1.2.tar.gz?x=1&region=eu"  # own options are not sent
    assert f.archive == "tar.gz" and f.checksum is not None and f.checksum[0] == "md5"
    assert f.headers == {"Authorization": "Bearer 1.2"} and f.destination == TASK / "local"
    local = resolve(art("files/conf.txt"), ENV, TASK, SHARED)
    assert local.path == TASK / "files/conf.txt" and local.url == ""  # relative to the task dir
    assert resolve(art("file:///srv/a%20b.txt"), ENV, TASK, SHARED).path == Path("/srv/a b.txt")
    assert (
        resolve(art("/srv/conf.txt", getter_mode="file"), ENV, TASK, SHARED).destination
        == TASK / "local/conf.txt"
    )


@pytest.mark.parametrize(
    ("source", "scheme"),
    [
        ("s3::https://bucket/x", "s3"),
        ("git::https://h/r.git", "git"),
        ("github.com/a/b", "git"),
        ("gcs://b/x", "gcs"),
    ],
)
def test_sources_of_getters_drover_lacks_are_refused(source: str, scheme: str) -> None:
    with pytest.raises(ArtifactError, match=f"download not supported for scheme '{scheme}'"):
        resolve(art(source), ENV, TASK, SHARED)


# --- unpacking ---
def _tar(
    tmp: Path, members: dict[str, bytes], mode: str = "w:gz", link: tuple[str, str] | None = None
) -> Path:
    path = tmp / "a.tar.gz"
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link[0])
            info.type, info.linkname = tarfile.SYMTYPE, link[1]
            tf.addfile(info)
    return path


def test_a_tar_gz_is_unpacked_into_the_destination(tmp_path: Path) -> None:
    archive = _tar(tmp_path, {"bin/app": b"#!", "README": b"hi", "/etc/abs": b"a"})
    unpack(archive, "tar.gz", tmp_path / "out", into_dir=True)
    assert (tmp_path / "out/bin/app").read_bytes() == b"#!" and (tmp_path / "out/README").read_text() == "hi"
    assert (tmp_path / "out/etc/abs").read_bytes() == b"a"  # an absolute name lands inside, as in go-getter


@pytest.mark.parametrize(
    ("members", "link"),
    [
        ({"../escape": b"x"}, None),
        ({}, ("out-link", "/etc/passwd")),
        ({}, ("rel-link", "../../outside")),
    ],
)
def test_tar_entries_outside_the_destination_are_refused(
    tmp_path: Path, members: dict[str, bytes], link: tuple[str, str] | None
) -> None:
    archive = _tar(tmp_path, {"ok": b"1", **members}, link=link)
    with pytest.raises(ArtifactError, match="refused archive entry"):
        unpack(archive, "tar.gz", tmp_path / "out", into_dir=True)
    assert not (tmp_path / "escape").exists()


def test_zip_is_unpacked_and_traversal_refused(tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("dir/a.txt", "A")
    unpack(good, "zip", tmp_path / "out", into_dir=True)
    assert (tmp_path / "out/dir/a.txt").read_text() == "A"
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../evil.txt", "E")
    with pytest.raises(ArtifactError, match="outside the destination"):
        unpack(bad, "zip", tmp_path / "out2", into_dir=True)


def test_a_gz_file_unpacks_to_one_file_only_in_file_mode(tmp_path: Path) -> None:
    (archive := tmp_path / "c.txt.gz").write_bytes(gzip.compress(b"conf"))
    with pytest.raises(ArtifactError, match="single file"):
        unpack(archive, "gz", tmp_path / "out", into_dir=True)
    unpack(archive, "gz", tmp_path / "out/c.txt", into_dir=False)
    assert (tmp_path / "out/c.txt").read_bytes() == b"conf"


# --- fetching for real ---
@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, list[dict[str, str]]]]:
    """An HTTP server on a free port of 127.0.0.1 serving a directory; the headers it saw."""
    root = tmp_path / "www"
    root.mkdir()
    seen: list[dict[str, str]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: object, **kw: object) -> None:
            super().__init__(*a, directory=str(root), **kw)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            super().do_GET()

        def log_message(self, *_: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root, seen
    httpd.shutdown()
    httpd.server_close()


async def test_http_artifacts_land_checked_and_unpacked(
    tmp_path: Path, server: tuple[str, Path, list[dict[str, str]]]
) -> None:
    base, root, seen = server
    (root / "app.bin").write_bytes(b"binary")
    _tar(root, {"conf/app.conf": b"port=1"}).rename(root / "bundle.tgz")
    task, shared = tmp_path / "web", tmp_path / "alloc"
    good = hashlib.sha256(b"binary").hexdigest()
    f = resolve(
        art(
            f"{base}/app.bin", getter_options={"checksum": f"sha256:{good}"}, getter_headers={"X-Token": "t"}
        ),
        (),
        task,
        shared,
    )
    await fetch(f, tmp_path)
    assert (task / "local/app.bin").read_bytes() == b"binary" and seen[-1]["X-Token"] == "t"
    await fetch(resolve(art(f"{base}/bundle.tgz"), (), task, shared), tmp_path)
    assert (task / "local/conf/app.conf").read_text() == "port=1"
    # the archive itself kept whole, as a file named by `filename`
    kept = art(f"{base}/bundle.tgz", getter_options={"archive": "false", "filename": "b.tgz"})
    await fetch(resolve(kept, (), task, shared), tmp_path)
    assert (task / "local/b.tgz").stat().st_size > 0
    bad = art(
        f"{base}/app.bin", getter_options={"checksum": "sha256:" + "00" * 32}, relative_dest="local/other"
    )
    with pytest.raises(ArtifactError, match="checksums did not match"):
        await fetch(resolve(bad, (), task, shared), tmp_path)
    assert not (task / "local/other/app.bin").exists()  # a file that fails its checksum is not left
    with pytest.raises(ArtifactError, match="bad response code: 404"):
        await fetch(resolve(art(f"{base}/missing.bin"), (), task, shared), tmp_path)


async def test_local_artifacts_files_and_directories(tmp_path: Path) -> None:
    task, shared = tmp_path / "web", tmp_path / "alloc"
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub/x.txt").write_text("x")
    await fetch(resolve(art(f"file://{src}/sub/x.txt"), (), task, shared), tmp_path)
    assert (task / "local/x.txt").read_text() == "x"
    await fetch(resolve(art(str(src), relative_dest="local/tree"), (), task, shared), tmp_path)
    assert (task / "local/tree/sub/x.txt").read_text() == "x"
    await fetch(
        resolve(
            art(str(src / "sub/x.txt"), getter_mode="file", relative_dest="local/y.txt"), (), task, shared
        ),
        tmp_path,
    )
    assert (task / "local/y.txt").read_text() == "x"
    with pytest.raises(ArtifactError, match="not a file"):
        await fetch(resolve(art(str(tmp_path / "nope"), getter_mode="file"), (), task, shared), tmp_path)
