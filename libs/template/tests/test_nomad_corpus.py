"""Templates from Nomad's documentation and e2e jobs, and consul-template's Nomad functions,
with the services, variables and environment they read and what they render."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from drover.template import Call, Dependency, ServiceEntry, ServiceStub, Variable, VarMeta, choose, render


@dataclass
class Catalog:
    """Nomad's data as a client would hand it to a render: registrations and variables."""

    registrations: list[ServiceEntry] = field(default_factory=list)
    vars: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def services(self, name: str) -> list[ServiceEntry]:
        return [s for s in self.registrations if s.Name == name]

    def service_names(self) -> list[ServiceStub]:
        out: dict[str, ServiceStub] = {}
        for s in self.registrations:
            out.setdefault(s.Name, ServiceStub(s.Name, [])).Tags.extend(s.Tags)
        return list(out.values())

    def variable(self, path: str, namespace: str) -> Variable | None:
        items = self.vars.get((namespace, path))
        if items is None:
            return None
        return Variable(
            VarMeta(namespace, path, 10, 12, 1_700_000_000_000_000_000, 1_700_000_000_000_000_000), items
        )

    def variables(self, prefix: str, namespace: str) -> list[VarMeta]:
        return [
            VarMeta(ns, path, 1, 1)
            for (ns, path) in sorted(self.vars)
            if path.startswith(prefix) and (namespace in (ns, "*"))
        ]


def svc(
    name: str, address: str, port: int, alloc: str, tags: list[str] | None = None, dc: str = "dc1"
) -> ServiceEntry:
    return ServiceEntry(
        ID=f"_nomad-task-{alloc}-{name}-{port}", Name=name, Node="node-1", Address=address, Port=port,
        Datacenter=dc, Tags=tags or [], JobID="job", AllocID=alloc,
    )  # fmt: skip


CATALOG = Catalog(
    registrations=[
        svc("my-app", "10.0.0.1", 8080, "a1", ["v1", "http"]),
        svc("my-app", "10.0.0.2", 8081, "a2", ["http"]),
        svc("redis", "10.0.0.9", 6379, "r1"),
        svc("nfs", "10.0.1.5", 2049, "n1"),
        svc("db", "10.1.0.1", 5432, "d1"),
        svc("db", "10.1.0.2", 5432, "d2"),
        svc("db", "10.1.0.3", 5432, "d3"),
        svc("default-nomad-provider-service-primary", "10.2.0.1", 9000, "p1", ["foo", "bar"]),
    ],
    vars={
        ("default", "nomad/jobs/redis"): {"maxconns": "15"},
        ("example_namespace", "nomad/jobs/redis"): {"maxconns": "30"},
        ("default", "app/config"): {"db": "postgres://db:5432", "user": "app"},
        ("default", "app/beta_active"): {"on": "yes"},
        ("default", "path/to/filter/a"): {"k": "v"},
    },
)
ENV = {
    "NOMAD_ALLOC_ID": "7f2c1d2e-0000-4000-8000-000000000001",
    "NOMAD_PORT_db": "23456",
    "NOMAD_TASK_DIR": "/alloc/task/local",
    "NOMAD_ALLOC_DIR": "/alloc",
    "NOMAD_TASK_NAME": "raw_exec",
    "NOMAD_JOB_NAME": "templating",
    "NOMAD_REGION": "global",
    "NOMAD_ADDR_registryhttp": "10.0.0.7:5000",
    "NOMAD_META_mykey": "some_value",
    "node.unique.id": "f3e0a5b4",
    "node.datacenter": "dc1",
    "attr.cpu.numcores": "8",
    "meta.node_meta_key": "rack-3",
}


def chosen(n: int, name: str) -> list[ServiceEntry]:
    return choose(CATALOG.services(name), n, ENV["NOMAD_ALLOC_ID"])


CORPUS: list[tuple[str, str, str]] = [
    (
        "docs: nomadService and nomadServices as NGINX upstreams",
        """# Configuration for a single NGINX upstream service.
upstream my_app {
  {{- range nomadService "my-app" }}
  server {{ .Address }}:{{ .Port }};{{- end }}
}

{{ range nomadServices }}
# Configuration for service {{ .Name }}.
upstream {{ .Name | toLower }} {
  {{- range nomadService .Name }}
  server {{ .Address}}:{{ .Port }};{{- end }}
}
{{ end -}}
""",
        """# Configuration for a single NGINX upstream service.
upstream my_app {
  server 10.0.0.1:8080;
  server 10.0.0.2:8081;
}


# Configuration for service db.
upstream db {
  server 10.1.0.1:5432;
  server 10.1.0.2:5432;
  server 10.1.0.3:5432;
}

# Configuration for service default-nomad-provider-service-primary.
upstream default-nomad-provider-service-primary {
  server 10.2.0.1:9000;
}

# Configuration for service my-app.
upstream my-app {
  server 10.0.0.1:8080;
  server 10.0.0.2:8081;
}

# Configuration for service nfs.
upstream nfs {
  server 10.0.1.5:2049;
}

# Configuration for service redis.
upstream redis {
  server 10.0.0.9:6379;
}
""",
    ),
    (
        "docs: heredoc of env values",
        """  ---
    bind_port:   {{ env "NOMAD_PORT_db" }}
    scratch_dir: {{ env "NOMAD_TASK_DIR" }}
    node_id:     {{ env "node.unique.id" }}
""",
        """  ---
    bind_port:   23456
    scratch_dir: /alloc/task/local
    node_id:     f3e0a5b4
""",
    ),
    (
        "docs: node variables",
        """  ---
    node_dc:    {{ env "node.datacenter" }}
    node_cores: {{ env "attr.cpu.numcores" }}
    meta_key:   {{ env "meta.node_meta_key" }}
""",
        "  ---\n    node_dc:    dc1\n    node_cores: 8\n    meta_key:   rack-3\n",
    ),
    ("docs: task meta", '  {{ env "NOMAD_META_mykey" }}\n', "  some_value\n"),
    ("docs: nomadVar item", '{{ with nomadVar "nomad/jobs/redis" }}{{ .maxconns }}{{ end }}\n', "15\n"),
    (
        "docs: nomadVar in another namespace",
        '{{ with nomadVar "nomad/jobs/redis@example_namespace" }}{{ .maxconns }}{{ end }}\n',
        "30\n",
    ),
    (
        "docs: nomadVar metadata",
        '{{ with nomadVar "nomad/jobs/redis" }}\nPath:       {{ .Metadata.Path }}\nNamespace:  {{ .Metadata.Namespace }}\n{{ end }}\n',
        "\nPath:       nomad/jobs/redis\nNamespace:  default\n\n",
    ),
    (
        "docs: nomadVarExists",
        '{{ if nomadVarExists "app/beta_active" }}beta{{ else }}stable{{ end }}',
        "beta",
    ),
    (
        "docs: nomadVarExists, absent",
        '{{ if nomadVarExists "app/nope" }}beta{{ else }}stable{{ end }}',
        "stable",
    ),
    (
        "docs: nomadVarList prints paths",
        "{{ range nomadVarList }}\n  {{ . }}\n{{ end }}\n",
        "\n  app/beta_active\n\n  app/config\n\n  nomad/jobs/redis\n\n  path/to/filter/a\n\n",
    ),
    (
        "docs: nomadVarList .Path",
        "{{ range nomadVarList }}{{ .Path }};{{ end }}",
        "app/beta_active;app/config;nomad/jobs/redis;path/to/filter/a;",
    ),
    (
        "docs: nomadVarList prefix",
        '{{ range nomadVarList "path/to/filter" }}{{ . }}{{ end }}',
        "path/to/filter/a",
    ),
    (
        "docs: nomadVarList in a namespace",
        '{{ range nomadVarList "nomad@example_namespace" }}{{ .Namespace }}:{{ . }}{{ end }}',
        "example_namespace:nomad/jobs/redis",
    ),
    (
        "nomadVar items by range, Keys, Values, Tuples",
        '{{ with nomadVar "app/config" }}{{ range $k, $v := . }}{{ $k }}={{ $v }};{{ end }}|{{ .Keys }}|{{ .Values }}'
        "|{{ range .Tuples }}{{ .K }}:{{ .V }} {{ end }}{{ end }}",
        "db=postgres://db:5432;user=app;|[db user]|[postgres://db:5432 app]|db:postgres://db:5432 user:app ",
    ),
    ("nomadVar as JSON", '{{ nomadVar "app/config" | toJSON }}', '{"db":"postgres://db:5432","user":"app"}'),
    ("nomadVar Parent", '{{ (nomadVar "app/config").Parent.Metadata.Path }}', "app/config"),
    ("nomadVar ItemsMap", '{{ (nomadVar "app/config").ItemsMap.user }}', "app"),
    ("nomadVar missing key", '{{ with nomadVar "app/config" }}{{ .nope }}{{ end }}', "<no value>"),
    (
        "docs: env file",
        '# Lines starting with a # are ignored\n\nLOG_LEVEL="{{ env "NOMAD_REGION" }}"\n',
        '# Lines starting with a # are ignored\n\nLOG_LEVEL="global"\n',
    ),
    (
        "e2e consultemplate: nomad_provider_service_lookup services",
        "{{ range nomadServices }}\nservice {{ .Name }} {{ .Tags }}{{ end }}\n",
        "\nservice db []\nservice default-nomad-provider-service-primary [bar foo]\nservice my-app [http v1]"
        "\nservice nfs []\nservice redis []\n",
    ),
    (
        "e2e consultemplate: nomad_provider_service_lookup service",
        '{{ range nomadService "default-nomad-provider-service-primary" }}\n'
        "service {{ .Name }} {{ .Tags }} {{ .Datacenter }} {{ .AllocID }}{{ end }}\n",
        "\nservice default-nomad-provider-service-primary [bar foo] dc1 p1\n",
    ),
    ("e2e consultemplate: template_shared_alloc", '{{env "NOMAD_ALLOC_DIR"}}\n', "/alloc\n"),
    ("e2e consultemplate: env template", 'HELLO_FROM={{env "NOMAD_TASK_NAME"}}\n', "HELLO_FROM=raw_exec\n"),
    (
        "e2e docker_registry: auth.json",
        '{\n  "auths": {\n    "{{- env "NOMAD_ADDR_registryhttp" -}}": {\n      "auth": "x"\n    }\n  }\n}\n',
        '{\n  "auths": {\n    "10.0.0.7:5000": {\n      "auth": "x"\n    }\n  }\n}\n',
    ),
    (
        "e2e docker_registry: script",
        'podman push docker.io/library/bash:5 {{env "NOMAD_ADDR_registryhttp" -}}/docker.io/library/bash_auth_basic:private\n',
        "podman push docker.io/library/bash:5 10.0.0.7:5000/docker.io/library/bash_auth_basic:private\n",
    ),
    ("e2e metrics: prometheus region", "region: '{{ env \"NOMAD_REGION\" }}'", "region: 'global'"),
    (
        "demo csi nfs: NFS_ADDRESS",
        "NFS_ADDRESS={{- range nomadService `nfs` }}{{ .Address }}{{ end -}}",
        "NFS_ADDRESS=10.0.1.5",
    ),
    (
        "e2e exec2: http_curl",
        '{{ range nomadService "my-app" }}\n(curl -s -S -L "{{ .Address }}:{{ .Port }}/hi.html") || true\n{{ end }}\n',
        '\n(curl -s -S -L "10.0.0.1:8080/hi.html") || true\n\n(curl -s -S -L "10.0.0.2:8081/hi.html") || true\n\n',
    ),
    ("consul-template: tag filter", '{{ range nomadService "v1.my-app" }}{{ .Port }}{{ end }}', "8080"),
    (
        "service fields",
        '{{ with index (nomadService "redis") 0 }}{{ .ID }} {{ .NodeID }} {{ .JobID }} {{ .Namespace }}{{ end }}',
        "_nomad-task-r1-redis-6379 node-1 job default",
    ),
    (
        "byTag over services",
        '{{ range $tag, $s := nomadService "my-app" | byTag }}{{ $tag }}:{{ len $s }} {{ end }}',
        "http:2 v1:1 ",
    ),
    ("no such service", '{{ range nomadService "ghost" }}x{{ else }}none{{ end }}', "none"),
]


@pytest.mark.parametrize(("what", "text", "expected"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus(what: str, text: str, expected: str) -> None:
    assert render(text, Call(env=ENV, nomad=CATALOG), name=what).text == expected


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_rendezvous_choice_as_nomad_server_chooses(count: int) -> None:
    text = '{{$allocID := env "NOMAD_ALLOC_ID" -}}\n{{range nomadService COUNT $allocID "db"}}\n  server {{ .Address }}:{{ .Port }}\n{{- end}}\n'
    out = render(text.replace("COUNT", str(count)), Call(env=ENV, nomad=CATALOG)).text
    picked = chosen(count, "db")
    assert len(picked) == min(count, 3)
    assert out == "".join(f"\n  server {s.Address}:{s.Port}" for s in picked) + "\n"


def test_rendezvous_choice_is_stable_and_depends_on_the_key() -> None:
    one = [s.AllocID for s in chosen(2, "db")]
    assert one == [s.AllocID for s in chosen(2, "db")]
    others = {
        tuple(s.AllocID for s in choose(CATALOG.services("db"), 1, key))
        for key in ("a", "b", "c", "d", "e", "f")
    }
    assert len(others) > 1


def test_dependencies_are_recorded_for_a_watch() -> None:
    text = (
        '{{ range nomadService "db" }}{{ end }}{{ range nomadServices }}{{ end }}'
        '{{ with nomadVar "app/config" }}{{ end }}{{ range nomadVarList "app/" }}{{ end }}{{ nomadVarExists "x/y" }}'
    )
    out = render(text, Call(nomad=CATALOG))
    assert out.used == [
        Dependency("service", "db"),
        Dependency("services", ""),
        Dependency("var", "app/config"),
        Dependency("varlist", "app/"),
        Dependency("var", "x/y"),
    ]
    assert out.missing == []


def test_a_missing_variable_blocks_the_render_as_consul_template_does() -> None:
    out = render('{{ with nomadVar "app/absent" }}{{ .x }}{{ else }}none{{ end }}', Call(nomad=CATALOG))
    assert out.text == "none"
    assert out.missing == [Dependency("var", "app/absent")]


def test_an_empty_safe_list_blocks_and_the_plain_one_does_not() -> None:
    assert render('{{ nomadVarListSafe "zzz" }}', Call(nomad=CATALOG)).missing == [
        Dependency("varlist", "zzz")
    ]
    assert render('{{ nomadVarList "zzz" }}', Call(nomad=CATALOG)).missing == []


def test_consul_and_vault_functions_parse_but_never_have_data() -> None:
    text = 'key: {{ key "service/my-key" }}\n{{ with secret "secret/data/app" }}{{ .Data.data.x }}{{ end }}'
    out = render(text, Call(env=ENV, nomad=CATALOG))
    assert out.text == "key: \n"
    assert out.missing == [
        Dependency("consul-key", "service/my-key"),
        Dependency("vault-secret", "secret/data/app"),
    ]


def test_without_nomad_data_every_nomad_read_is_missing() -> None:
    out = render('{{ range nomadService "db" }}{{ end }}{{ nomadVar "a" }}', Call())
    assert out.missing == [Dependency("service", "db"), Dependency("var", "a")]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{{ nomadService "a" "b" }}', "expected arguments <service> or <count> <key> <service>"),
        ('{{ nomadService "1" "k" "db" }}', "expected integer for <count> argument"),
        ('{{ nomadService "bad name!" }}', 'nomad.service: invalid format: "bad name!"'),
        ('{{ nomadVarList "a" "b" }}', 'nomadVarList takes either a single "prefix" parameter'),
    ],
)
def test_nomad_function_errors(text: str, words: str) -> None:
    with pytest.raises(Exception, match="error calling") as raised:
        render(text, Call(nomad=CATALOG), name="t")
    assert words in str(raised.value)
