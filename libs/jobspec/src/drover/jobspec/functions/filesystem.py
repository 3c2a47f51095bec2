"""The filesystem functions: path arithmetic (abspath, basename, dirname, pathexpand) and files
read (file, filebase64, fileexists, fileset), each through the `Files` its caller hands in, as
drover.jobspec does no I/O itself. A relative path is taken from the jobspec's directory; ~ is
the home directory. Without `Files` all eight are refused, as Nomad's servers refuse them."""

from __future__ import annotations

import base64
import itertools
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, takes


@dataclass(frozen=True)
class Files:
    """The file system as a jobspec's functions see it.

    `read` gives a file's bytes, `kind` says what a path is ("file", "dir", "other", or None
    where there is nothing), `listdir` names a directory's entries; each raises OSError when it
    cannot tell. `cwd` is what abspath() resolves against, `home` what ~ stands for ("" when
    there is none)."""

    read: Callable[[str], bytes]
    kind: Callable[[str], str | None]
    listdir: Callable[[str], Sequence[str]]
    cwd: str = "/"
    home: str = ""

    @classmethod
    def in_memory(cls, contents: Mapping[str, bytes | str], cwd: str = "/", home: str = "") -> Files:
        """Files holding `contents` (path to content; a relative path is under `cwd`), with
        every directory the paths imply."""

        def absolute(path: str) -> str:
            return clean(posixpath.join(cwd, path))

        data = {absolute(p): c.encode() if isinstance(c, str) else c for p, c in contents.items()}
        dirs = {"/"}
        for path in data:
            parent = posixpath.dirname(path)
            while parent not in dirs:
                dirs.add(parent)
                parent = posixpath.dirname(parent)

        def read(path: str) -> bytes:
            if absolute(path) not in data:
                raise FileNotFoundError(path)
            return data[absolute(path)]

        def kind(path: str) -> str | None:
            p = absolute(path)
            return "file" if p in data else "dir" if p in dirs else None

        def listdir(path: str) -> list[str]:
            p = absolute(path)
            if p not in dirs:
                raise NotADirectoryError(path)
            return sorted(
                posixpath.basename(q) for q in (*data, *dirs) if q != "/" and posixpath.dirname(q) == p
            )

        return cls(read, kind, listdir, cwd, home)


def clean(path: str) -> str:
    """Go's filepath.Clean: "." for nothing, one leading slash at most."""
    cleaned = posixpath.normpath(path) if path else "."
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _join(*parts: str) -> str:
    """Go's filepath.Join: the non-empty parts joined and cleaned."""
    kept = [p for p in parts if p]
    return clean("/".join(kept)) if kept else ""


def _basename(path: str) -> str:
    if not path:
        return "."
    stripped = path.rstrip("/")
    return stripped.rsplit("/", 1)[-1] if stripped else "/"


def _dirname(path: str) -> str:
    return clean(path[: path.rfind("/") + 1])


def _expand_home(path: str, home: str) -> str:
    """go-homedir's Expand: a leading "~" or "~/" is the home directory."""
    if not path.startswith("~"):
        return path
    if len(path) > 1 and path[1] not in "/\\":
        raise FunctionError("cannot expand user-specific home dir")
    if not home:
        raise FunctionError("the home directory is not known here")
    return _join(home, path[1:])


class _Functions:
    """The eight functions over one `Files` and the jobspec's directory."""

    def __init__(self, files: Files, base_dir: str) -> None:
        self.files = files
        self.base_dir = base_dir

    def abspath(self, path: Any) -> str:
        where = string(path, "path")
        return clean(where) if where.startswith("/") else _join(self.files.cwd, where)

    def locate(self, path: str) -> str:
        path = _expand_home(path, self.files.home)
        return clean(path if path.startswith("/") else _join(self.base_dir, path))

    def read(self, path: Any) -> bytes:
        where = self.locate(string(path, "path"))
        try:
            return self.files.read(where)
        except FileNotFoundError:
            raise FunctionError(f"no file exists at {where}") from None
        except OSError:
            raise FunctionError(f"failed to read {where}") from None

    def file(self, path: Any) -> str:
        try:
            return self.read(path).decode()
        except UnicodeDecodeError:
            raise FunctionError(
                f"contents of {string(path, 'path')} are not valid UTF-8; use filebase64 for them"
            ) from None

    def filebase64(self, path: Any) -> str:
        return base64.b64encode(self.read(path)).decode()

    def fileexists(self, path: Any) -> bool:
        where = self.locate(string(path, "path"))
        try:
            kind = self.files.kind(where)
        except OSError:
            raise FunctionError(f"failed to stat {where}") from None
        if kind in (None, "file"):
            return kind == "file"
        raise FunctionError(f"{where} is not a regular file, but a {kind}")

    def fileset(self, path: Any, pattern: Any) -> list[str]:
        root = string(path, "path")
        if not root.startswith("/"):
            root = _join(self.base_dir, root)
        full = _join(root, string(pattern, "pattern"))
        found: set[str] = set()
        try:
            for alternative in _alternatives(full):
                found.update(self._glob(alternative))
        except OSError as e:
            raise FunctionError(f"failed to glob pattern ({full}): {e}") from None
        return sorted(posixpath.relpath(m, root or ".") for m in found)

    def _glob(self, pattern: str) -> Iterator[str]:
        """The regular files `pattern` matches, component by component; ** is any number of
        directories (none too), * any characters but "/" (leading dots too), ? one, [...] a class."""
        absolute = pattern.startswith("/")
        parts = [p for p in pattern.split("/") if p]
        yield from self._walk("/" if absolute else ".", parts, absolute)

    def _walk(self, at: str, parts: list[str], absolute: bool) -> Iterator[str]:
        kind = self.files.kind(at)
        if not parts:
            if kind == "file":
                yield at if absolute else posixpath.normpath(at)
            return
        if kind != "dir":
            return
        head, rest = parts[0], parts[1:]
        if head == "**":
            yield from self._walk(at, rest, absolute)
            for name in self.files.listdir(at):
                child = posixpath.join(at, name)
                if self.files.kind(child) == "dir":
                    yield from self._walk(child, parts, absolute)
                elif not rest:
                    yield from self._walk(child, [], absolute)
            return
        if not re.search(r"[*?\[\\]", head):
            yield from self._walk(posixpath.join(at, head), rest, absolute)
            return
        matcher = _component(head)
        for name in self.files.listdir(at):
            if matcher.fullmatch(name):
                yield from self._walk(posixpath.join(at, name), rest, absolute)


def _alternatives(pattern: str) -> list[str]:
    """`pattern` with each {a,b} group expanded into the patterns it stands for."""
    m = re.search(r"(?<!\\)\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    options = re.split(r"(?<!\\),", m.group(1))
    return list(
        itertools.chain.from_iterable(
            _alternatives(pattern[: m.start()] + option + pattern[m.end() :]) for option in options
        )
    )


def _component(glob: str) -> re.Pattern[str]:
    """One path component's glob as a regular expression."""
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                raise FunctionError("syntax error in pattern")
            body = glob[i + 1 : end]
            negate = body.startswith("^")
            members = re.sub(r"([\]\[^])", r"\\\1", body[1:] if negate else body)
            out.append(f"[{'^' if negate else ''}{members}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def table(files: Files | None, base_dir: str) -> dict[str, Fn]:
    names = ("abspath", "basename", "dirname", "pathexpand", "file", "filebase64", "fileexists", "fileset")
    if files is None:
        return {name: takes(_disabled, rest="args") for name in names}
    fs = _Functions(files, base_dir)
    return {
        "abspath": takes(fs.abspath, "path"),
        "basename": takes(lambda p: _basename(string(p, "path")), "path"),
        "dirname": takes(lambda p: _dirname(string(p, "path")), "path"),
        "pathexpand": takes(lambda p: _expand_home(string(p, "path"), files.home), "path"),
        "file": takes(fs.file, "path"),
        "filebase64": takes(fs.filebase64, "path"),
        "fileexists": takes(fs.fileexists, "path"),
        "fileset": takes(fs.fileset, "path", "pattern"),
    }


def _disabled(*args: Any) -> Any:
    raise FunctionError("filesystem functions are disabled here (no files were handed to this parse)")
