"""`drover acl ...` as Nomad's `nomad acl ...`, each verb in a subprocess against an API with ACLs
on: the bootstrap, a policy applied, listed, read and deleted, a token created, listed, read, used
and deleted; the token of `-token` (anywhere on the line) or NOMAD_TOKEN sent by every verb."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from drover.runtime.embedded import wait_for_port

from .cluster import Cluster
from .prefork import run_drover


@pytest.fixture
def api(database_url: str, nats_url: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(database_url, nats_url, tmp_path, env={"DROVER_ACL_ENABLED": "true"})
    try:
        c.spawn("api")
        wait_for_port(c.port, 60, proc=c.procs["api"][0])
        yield c
    finally:
        c.stop()


def drover(c: Cluster, *args: str, token: str = "", code: int = 0) -> str:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DROVER_ADDR", "NOMAD_ADDR", "NOMAD_TOKEN", "DROVER_TOKEN")
    }
    env = {**base, "NOMAD_ADDR": str(c.http.base_url), **({"NOMAD_TOKEN": token} if token else {})}
    p = run_drover(list(args), env, 60)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert p.returncode == code, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout + p.stderr


def field(text: str, name: str) -> str:
    m = re.search(rf"^{name}\s+= (.*)$", text, re.M)
    assert m, text
    return m.group(1).strip()


def test_the_acl_verbs_and_the_token_every_verb_sends(api: Cluster, tmp_path: Path) -> None:
    out = drover(api, "acl", "bootstrap")
    root = field(out, "Secret ID")
    assert (field(out, "Name"), field(out, "Type"), field(out, "Global")) == (
        "Bootstrap Token",
        "management",
        "true",
    )
    assert field(out, "Expiry Time") == "<none>" and field(out, "Policies") == "n/a"
    assert "ACL bootstrap already done (reset index:" in drover(api, "acl", "bootstrap", code=1)
    # Without a token the anonymous token has nothing; -token after the verb or before it.
    assert "Permission denied" in drover(api, "job", "status", code=1)
    assert "No running jobs" in drover(api, "job", "status", "-token", root)
    assert "No running jobs" in drover(api, "-token=" + root, "job", "status")
    rules = tmp_path / "readonly.hcl"
    rules.write_text('namespace "default" {\n  policy = "read"\n}\n')
    out = drover(
        api, "acl", "policy", "apply", "-description", "Read jobs", "readonly", str(rules), "-token", root
    )
    assert out.strip() == 'Successfully wrote "readonly" ACL policy!'
    assert re.search(r"^readonly\s+Read jobs$", drover(api, "acl", "policy", "list", token=root), re.M)
    info = drover(api, "acl", "policy", "info", "readonly", token=root)
    assert field(info, "Description") == "Read jobs" and 'policy = "read"' in info
    out = drover(
        api, "acl", "token", "create", "-name", "ci", "-policy", "readonly", "-ttl", "1h", token=root
    )
    accessor, secret = field(out, "Accessor ID"), field(out, "Secret ID")
    assert field(out, "Policies") == "readonly" and field(out, "Expiry Time") != "<none>"
    listed = drover(api, "acl", "token", "list", token=root)
    assert re.search(rf"^ci\s+client\s+false\s+{accessor}\s", listed, re.M) and secret not in listed
    assert field(drover(api, "acl", "token", "info", accessor, token=root), "Secret ID") == secret
    me = drover(api, "acl", "token", "self", token=secret)
    assert field(me, "Accessor ID") == accessor and field(me, "Name") == "ci"
    # The token reads and may not write: NOMAD_TOKEN is sent by every verb.
    assert "No running jobs" in drover(api, "job", "status", token=secret)
    assert "Permission denied" in drover(api, "system", "gc", token=secret, code=1)
    assert "Permission denied" in drover(api, "acl", "token", "list", token=secret, code=1)
    assert (
        drover(api, "acl", "token", "delete", accessor, token=root).strip()
        == f"Token {accessor} successfully deleted"
    )
    assert "Permission denied" in drover(api, "acl", "token", "self", token=secret, code=1)
    assert (
        drover(api, "acl", "policy", "delete", "readonly", token=root).strip()
        == 'Successfully deleted "readonly" ACL policy!'
    )
    assert drover(api, "acl", "policy", "list", token=root).strip() == "No policies found"
