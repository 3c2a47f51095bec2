"""Every third-party import of a workspace package is declared by that package's pyproject.toml,
not merely installed because another package declares it: each package can be installed and
upgraded on its own, and a dependency dropped elsewhere breaks nothing here."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _members() -> list[Path]:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]["members"]
    return sorted(p.parent for g in globs for p in ROOT.glob(f"{g}/pyproject.toml"))


def _normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares names."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(member: Path) -> set[str]:
    """The distributions the member's pyproject.toml depends on, by name."""
    requirements = tomllib.loads((member / "pyproject.toml").read_text())["project"].get("dependencies", [])
    names = (re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r) for r in requirements)
    return {_normalized(m.group()) for m in names if m}


def _imports(member: Path) -> dict[str, set[str]]:
    """Each third-party module the member's source imports, at any level (in a function, under
    TYPE_CHECKING, in a try), with the files importing it. ``from a import b`` counts as a.b
    (b may be a module of a namespace package). The standard library and drover are left out."""
    out: dict[str, set[str]] = {}
    for path in sorted((member / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] not in (*sys.stdlib_module_names, "drover"):
                    out.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return out


@cache
def _top_level() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


@cache
def _files(distribution: str) -> tuple[str, ...]:
    return tuple(str(f) for f in importlib.metadata.distribution(distribution).files or ())


def _providers(module: str) -> set[str]:
    """The installed distributions that provide `module`: by its top-level name, or, for a
    namespace package spread over several (opentelemetry), the ones shipping its longest
    importable prefix."""
    candidates = set(_top_level().get(module.split(".")[0], ()))
    parts = module.split(".")
    for depth in range(len(parts), 1, -1) if len(candidates) > 1 else ():
        prefix = "/".join(parts[:depth])
        shipping = {
            d for d in candidates if any(f.startswith(prefix + "/") or f == prefix + ".py" for f in _files(d))
        }
        if shipping:
            return {_normalized(d) for d in shipping}
    return {_normalized(d) for d in candidates}


def test_imports_are_found_and_mapped_to_their_distributions() -> None:
    runtime = ROOT / "libs" / "runtime"
    assert runtime in _members()
    imports = _imports(runtime)
    assert "drover" not in {m.split(".")[0] for m in imports} and "asyncio" not in imports
    assert _providers("nats.js.api.ConsumerConfig") == {"nats-py"}
    assert _providers("opentelemetry.trace") == {"opentelemetry-api"}
    assert _providers("opentelemetry.sdk.trace.TracerProvider") == {"opentelemetry-sdk"}
    assert _declared(ROOT / "libs" / "jobspec") >= {"drover-model", "python-hcl2"}


@pytest.mark.parametrize("member", _members(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_third_party_import_is_declared_by_its_package(member: Path) -> None:
    declared = _declared(member)
    undeclared: dict[str, set[str]] = {}  # the distribution to declare: the files importing it
    for module, files in _imports(member).items():
        providers = _providers(module)
        if not providers & declared:
            key = " or ".join(sorted(providers)) or f"{module} (installed by no distribution)"
            undeclared.setdefault(key, set()).update(files)
    assert undeclared == {}
