"""Validation of a group's and a task's blocks (networks and ports, services and checks,
volumes and mounts, lifecycle, artifacts, templates, scaling, vault, identities, secrets): each
of Nomad's rules a row, against a service job that uses them all and is valid."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from drover.model import Job
from drover.model.canonicalize import canonicalize
from drover.model.durations import MILLISECOND, SECOND
from drover.model.validation import validate_job
from drover.model.validation.taskfiles import escapes_alloc_dir

G = "Task group 'web'"
T = "Task group 'web', task 'server'"
INIT = "Task group 'web', task 'init'"
SVC = f"{G}, service 'web'"

TG = "TaskGroups.0"
NET = f"{TG}.Networks.0"
CHECK = f"{TG}.Services.0.Checks.0"
TASK = f"{TG}.Tasks.0"
INIT_TASK = f"{TG}.Tasks.1"

_BASE: dict[str, Any] = {
    "ID": "web",
    "TaskGroups": [
        {
            "Name": "web",
            "Count": 2,
            "Networks": [
                {
                    "DynamicPorts": [{"Label": "http", "To": 8080}],
                    "ReservedPorts": [{"Label": "admin", "Value": 9090}],
                }
            ],
            "Services": [
                {
                    "Name": "web",
                    "PortLabel": "http",
                    "Provider": "nomad",
                    "Checks": [{"Name": "alive", "Type": "http", "Path": "/health",
                                "Interval": 10 * SECOND, "Timeout": 2 * SECOND}],
                }
            ],
            "Volumes": {"data": {"Name": "data", "Type": "host", "Source": "data"}},
            "Scaling": {"Min": 1, "Max": 5},
            "Tasks": [
                {
                    "Name": "server",
                    "Driver": "docker",
                    "Config": {"image": "nginx:1"},
                    "VolumeMounts": [{"Volume": "data", "Destination": "/srv"}],
                    "Artifacts": [{"GetterSource": "https://example.com/app.tgz", "RelativeDest": "local/app"}],
                    "Templates": [{"EmbeddedTmpl": "port={{ env \"NOMAD_PORT_http\" }}", "DestPath": "local/app.env"}],
                    "Vault": {"Role": "web"},
                    "Identities": [{"Name": "consul", "Audience": ["consul.io"]}],
                },
                {"Name": "init", "Driver": "docker", "Config": {"image": "busybox:1"}, "Lifecycle": {"Hook": "prestart"}},
            ],
        }
    ],
}  # fmt: skip


def put(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at a dotted path like `TaskGroups.0.Networks.0.Mode` (a list grows by one)."""
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    node: Any = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    if isinstance(node, list) and keys[-1] == len(node):
        node.append(value)
    else:
        node[keys[-1]] = value


def problems_of(changes: dict[str, Any], job_type: str = "service") -> list[str]:
    doc = copy.deepcopy(_BASE)
    doc["Type"] = job_type
    for path, value in changes.items():
        put(doc, path, value)
    return validate_job(canonicalize(Job.model_validate(doc)))


def test_the_job_using_every_block_is_valid() -> None:
    assert problems_of({}) == []


VALID = [
    ({f"{NET}.Mode": "bridge"}, "service"),
    ({f"{NET}.Mode": "cni/mynet"}, "service"),
    ({f"{NET}.Mode": "none"}, "service"),
    # The same static port twice is allowed when the second ignores the collision.
    ({f"{NET}.ReservedPorts.1": {"Label": "admin2", "Value": 9090, "IgnoreCollision": True}}, "service"),
    # The same static port on another host network is another port.
    ({f"{NET}.ReservedPorts.1": {"Label": "public", "Value": 9090, "HostNetwork": "public"}}, "service"),
    ({f"{NET}.DynamicPorts.0.To": -1}, "service"),
    ({f"{NET}.Hostname": "${NOMAD_ALLOC_ID}.web"}, "service"),
    # A driver-mode task service may name a numeric port.
    ({f"{TASK}.Services": [{"Name": "api", "PortLabel": "8080", "AddressMode": "driver", "Provider": "nomad"}]},
     "service"),
    # Consul runs script checks: named by the service's task.
    ({f"{TG}.Services": [{"Name": "web", "PortLabel": "http", "TaskName": "server",
                          "Checks": [{"Type": "script", "Command": "/bin/true", "Interval": SECOND,
                                      "Timeout": SECOND}]}]}, "service"),
    # Drover runs a nomad service's script checks: in the check's task, which may ignore warnings.
    ({f"{CHECK}.Type": "script", f"{CHECK}.Command": "/bin/true", f"{CHECK}.TaskName": "server",
      f"{CHECK}.OnUpdate": "ignore_warnings", f"{CHECK}.CheckRestart": {"Limit": 2, "IgnoreWarnings": True}},
     "service"),
    ({f"{TASK}.Services": [{"Name": "api", "Provider": "nomad", "Checks": [
        {"Type": "script", "Command": "/bin/true", "Args": ["-x"], "Interval": SECOND, "Timeout": SECOND}]}]},
     "service"),
    ({f"{CHECK}.Type": "tcp", f"{CHECK}.Path": ""}, "service"),
    ({f"{CHECK}.PortLabel": "admin"}, "service"),
    ({f"{TG}.Volumes.data.ReadOnly": True, f"{TG}.Volumes.data.AccessMode": "single-node-reader-only"}, "service"),
    ({f"{TG}.Volumes.db": {"Type": "csi", "Source": "db", "AccessMode": "multi-node-multi-writer",
                            "AttachmentMode": "file-system"}}, "service"),
    # Nomad takes a sidecar on any hook, a poststop one too.
    ({f"{INIT_TASK}.Lifecycle": {"Hook": "poststop", "Sidecar": True}}, "service"),
    # An artifact may land in the shared alloc directory.
    ({f"{TASK}.Artifacts.0.RelativeDest": "../alloc/data"}, "service"),
    ({f"{TASK}.Artifacts.0.GetterOptions": {"checksum": "md5:" + "0" * 32}}, "service"),
    ({f"{TASK}.Templates.0": {"SourcePath": "local/in.tpl", "DestPath": "/local/out", "Perms": "0600"}}, "service"),
    # Its own delimiters: what the default ones would take for an action is text
    ({f"{TASK}.Templates.0.EmbeddedTmpl": '[[ env "X" ]] {{ nope }}', f"{TASK}.Templates.0.LeftDelim": "[[",
      f"{TASK}.Templates.0.RightDelim": "]]"}, "service"),
    ({f"{TASK}.Templates.0.EmbeddedTmpl": '{{ range nomadService "db" }}{{ .Address }}{{ end }}'}, "service"),
    ({f"{TG}.Scaling": {"Min": 2, "Max": 2}}, "service"),
    ({f"{TG}.MaxRunDuration": 3600 * SECOND}, "batch"),
    ({f"{TASK}.Vault.ChangeMode": "signal", f"{TASK}.Vault.ChangeSignal": "SIGUSR1"}, "service"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "job_type"), VALID)
def test_valid_variants(changes: dict[str, Any], job_type: str) -> None:
    assert problems_of(changes, job_type) == []


# (changes, job type, place, words)
CASES: list[Any] = [
    # Networks and ports
    ({f"{TG}.Networks.1": {"DynamicPorts": [{"Label": "http"}]}}, "service", G,
     "port label 'http' already in use by the group network"),
    ({f"{TG}.Networks.1": {"Mode": "host"}}, "service", G, "only one network block is allowed per group, not 2"),
    ({f"{NET}.DynamicPorts.1": {"Label": "admin"}}, "service", G, "port label 'admin' already in use"),
    ({f"{TASK}.Resources.Networks": [{"DynamicPorts": [{"Label": "http"}]}]}, "service", G,
     "port label 'http' already in use by the group network"),
    ({f"{TASK}.Resources.Networks": [{"ReservedPorts": [{"Label": "own", "Value": 9090}]}]}, "service", G,
     "static port 9090 of port 'own' already reserved by port 'admin' of the group network"),
    ({f"{NET}.ReservedPorts.1": {"Label": "admin2", "Value": 9090}}, "service", G,
     "static port 9090 of port 'admin2' already reserved by port 'admin'"),
    ({f"{NET}.ReservedPorts.0.Value": 70000}, "service", G, "static port 'admin' (70000) is outside 1..65535"),
    ({f"{NET}.ReservedPorts.0.Value": -5}, "service", G, "static port 'admin' (-5) is outside 1..65535"),
    ({f"{NET}.DynamicPorts.0.To": -2}, "service", G, "port 'http' cannot be mapped to negative value -2"),
    ({f"{NET}.DynamicPorts.0.To": 65536}, "service", G, "cannot be mapped to a port (65536) greater than 65535"),
    ({f"{NET}.DynamicPorts.0.Value": 8080}, "service", G, "dynamic port 'http' has a static value 8080"),
    ({f"{NET}.DynamicPorts.1": {"Label": "my-port"}}, "service", G,
     "port label 'my-port' is not a valid environment variable name"),
    ({f"{NET}.DynamicPorts.1": {"To": 80}}, "service", G, "a port has no label"),
    ({f"{NET}.Mode": "overlay"}, "service", G, "network mode 'overlay' is unknown"),
    ({f"{NET}.Mode": "cni/"}, "service", G, "network mode 'cni/' is unknown"),
    ({f"{NET}.Mode": "bridge", f"{NET}.ReservedPorts.0.IgnoreCollision": True}, "service", G,
     "port 'admin' collision may not be ignored on network mode 'bridge'"),
    ({f"{NET}.Hostname": "a..b"}, "service", G, "hostname 'a..b' is not a valid DNS name"),
    ({f"{NET}.CNI": {"Args": {"a;b": "c"}}}, "service", G, "invalid ';' character in CNI arg key 'a;b'"),
    # Services
    ({f"{TG}.Services.0.PortLabel": "nope"}, "service", SVC, "port label 'nope' does not exist"),
    ({f"{CHECK}.PortLabel": "nope"}, "service", SVC, "port label 'nope' does not exist"),
    ({f"{TASK}.Services": [{"Name": "api", "PortLabel": "nope", "Provider": "nomad"}]}, "service",
     f"{T}, service 'api'", "port label 'nope' does not exist"),
    ({f"{TASK}.Services": [{"Name": "api", "PortLabel": "http", "Provider": "nomad",
                            "Checks": [{"Type": "tcp", "PortLabel": "8080", "Interval": SECOND, "Timeout": SECOND}]}]},
     "service", f"{T}, service 'api', check 1", 'cannot use a numeric port 8080 without address_mode "driver"'),
    ({f"{TG}.Services.0.Provider": "etcd"}, "service", SVC, "provider 'etcd' is unknown (expected consul or nomad)"),
    ({f"{TASK}.Services": [{"Name": "api", "PortLabel": "http", "Provider": "consul"}]}, "service", G,
     "services use more than one provider (consul, nomad)"),
    ({f"{TG}.Services.0.Name": "web_api"}, "service", f"{G}, service 'web_api'", "must be valid per RFC 1123"),
    ({f"{TG}.Services.0.AddressMode": "driver"}, "service", SVC, 'address_mode "driver" is only for services in a task'),
    ({f"{TG}.Services.0.AddressMode": "public"}, "service", SVC, "address_mode 'public' is unknown"),
    ({f"{TG}.Services.0.OnUpdate": "never"}, "service", SVC, "on_update 'never' is unknown"),
    ({f"{TG}.Services.1": {"Name": "web", "PortLabel": "http", "Provider": "nomad"}}, "service", G,
     "services are not unique: group->web:http"),
    ({f"{TASK}.Services": [{"Name": "api", "Provider": "nomad", "AddressMode": "alloc"}]}, "service",
     f"{T}, service 'api'", "address_mode 'alloc' is only for services in a group"),
    ({f"{TASK}.Services": [{"Name": "api", "Provider": "nomad", "TaskName": "init"}]}, "service",
     f"{T}, service 'api'", "may only name the task it belongs to, not 'init'"),
    # Checks
    ({f"{CHECK}.Type": "script", f"{CHECK}.Command": "/bin/true"}, "service", f"{SVC}, check 'alive'",
     "Service [web]->web or Check alive must specify task parameter"),
    ({f"{CHECK}.Type": "script", f"{CHECK}.TaskName": "server"}, "service", f"{SVC}, check 'alive'",
     "a script check must have a command"),
    ({f"{CHECK}.Type": "grpc"}, "service", f"{SVC}, check 'alive'",
     "invalid check type 'grpc', must be one of tcp, http, script"),
    ({f"{CHECK}.OnUpdate": "ignore_warnings"}, "service", f"{SVC}, check 'alive'",
     "on_update may only be 'ignore_warnings' for Consul or script checks"),
    ({f"{CHECK}.CheckRestart": {"Limit": 2, "IgnoreWarnings": True}}, "service", f"{SVC}, check 'alive'",
     "ignore_warnings on check_restart is only for Consul or script checks"),
    ({f"{TG}.Services.0.Provider": "consul", f"{CHECK}.Type": "udp"}, "service", f"{SVC}, check 'alive'",
     "invalid check type 'udp', must be one of grpc, tcp, http, script"),
    ({f"{CHECK}.Interval": 0}, "service", f"{SVC}, check 'alive'", "missing required value interval"),
    ({f"{CHECK}.Interval": 500 * MILLISECOND}, "service", f"{SVC}, check 'alive'",
     "interval 500ms cannot be lower than 1s"),
    ({f"{CHECK}.Timeout": 0}, "service", f"{SVC}, check 'alive'", "missing required value timeout"),
    ({f"{CHECK}.Timeout": 10 * MILLISECOND}, "service", f"{SVC}, check 'alive'", "timeout 10ms cannot be lower than 1s"),
    ({f"{CHECK}.Path": ""}, "service", f"{SVC}, check 'alive'", "an http check must have an http path"),
    ({f"{CHECK}.Path": "http://other/health"}, "service", f"{SVC}, check 'alive'", "must have a relative http path"),
    ({f"{CHECK}.InitialStatus": "unknown"}, "service", f"{SVC}, check 'alive'", "invalid initial check state"),
    ({f"{CHECK}.AddressMode": "auto"}, "service", f"{SVC}, check 'alive'", "auto is only valid for services"),
    ({f"{CHECK}.SuccessBeforePassing": 2}, "service", f"{SVC}, check 'alive'",
     "success_before_passing may only be set for Consul service checks"),
    ({f"{CHECK}.OnUpdate": "ignore", f"{CHECK}.CheckRestart": {"Limit": 3}}, "service", f"{SVC}, check 'alive'",
     "on_update 'ignore' is not compatible with check_restart"),
    ({f"{CHECK}.TaskName": "nope"}, "service", f"{SVC}, check 'alive'", "refers to non-existent task 'nope'"),
    ({f"{TG}.Services.0.PortLabel": "", f"{CHECK}.Type": "tcp"}, "service", f"{SVC}, check 'alive'",
     "check requires a port but neither it nor its service has one"),
    ({f"{TG}.Services.0.Provider": "consul", f"{CHECK}.Type": "script", f"{CHECK}.Command": "x"}, "service",
     f"{SVC}, check 'alive'", "Service [web]->web or Check alive must specify task parameter"),
    # Volumes and mounts
    ({f"{TASK}.VolumeMounts.0.Volume": "nope"}, "service", f"{T}, volume_mount 1",
     "volume mount references undefined volume 'nope'"),
    ({f"{TASK}.VolumeMounts.0.Volume": ""}, "service", f"{T}, volume_mount 1", "references an empty volume"),
    ({f"{TASK}.VolumeMounts.0.PropagationMode": "shared"}, "service", f"{T}, volume_mount 1",
     "invalid propagation mode 'shared'"),
    ({f"{TASK}.VolumeMounts.0.SELinuxLabel": "x"}, "service", f"{T}, volume_mount 1", "invalid SELinux label 'x'"),
    ({f"{TG}.Volumes.data.Type": "nfs"}, "service", f"{G}, volume 'data'", "volume has unrecognized type 'nfs'"),
    ({f"{TG}.Volumes.data.Source": ""}, "service", f"{G}, volume 'data'", "volume has an empty source"),
    ({f"{TG}.Volumes.data.MountOptions": {"FSType": "ext4"}}, "service", f"{G}, volume 'data'",
     "host volumes cannot have mount options"),
    ({f"{TG}.Volumes.data.AccessMode": "single-node-reader-only"}, "service", f"{G}, volume 'data'",
     "single-node-reader-only volumes must be read-only"),
    ({f"{TG}.Volumes.data.PerAlloc": True, f"{TG}.Volumes.data.Sticky": True}, "service", f"{G}, volume 'data'",
     "cannot be per_alloc and sticky"),
    ({f"{TG}.Volumes.data.PerAlloc": True, f"{TG}.Count": 1}, "system", f"{G}, volume 'data'",
     "cannot be per_alloc for system or sysbatch jobs"),
    ({f"{TG}.Volumes.db": {"Type": "csi", "Source": "db"}}, "service", f"{G}, volume 'db'",
     "CSI volumes must have an attachment mode"),
    ({f"{TG}.Volumes.db": {"Type": "csi", "Source": "db", "AttachmentMode": "file-system",
                           "AccessMode": "single-node-writer"}}, "service", f"{G}, volume 'db'",
     "single-node-writer access mode allows only one reader or writer"),
    # Lifecycle and the tasks' own fields
    ({f"{INIT_TASK}.Lifecycle.Hook": "prestop"}, "service", INIT, "lifecycle: invalid hook 'prestop'"),
    ({f"{INIT_TASK}.Lifecycle.Hook": ""}, "service", INIT, "lifecycle: no lifecycle hook provided"),
    ({f"{TASK}.Lifecycle": {"Hook": "poststart"}}, "service", G, "must have at least one main task"),
    ({f"{TASK}.Leader": True, f"{INIT_TASK}.Leader": True}, "service", G, "more than one task is marked as leader"),
    ({f"{TASK}.ShutdownDelay": -SECOND}, "service", T, "shutdown_delay -1s is negative"),
    ({f"{TG}.ShutdownDelay": -SECOND}, "service", G, "shutdown_delay -1s is negative"),
    ({f"{TG}.MaxRunDuration": -SECOND}, "batch", G, "max_run_duration -1s must be greater than zero"),
    ({f"{TG}.MaxRunDuration": SECOND}, "service", G, "service jobs do not allow max_run_duration"),
    # Artifacts
    ({f"{TASK}.Artifacts.0.GetterSource": ""}, "service", f"{T}, artifact 1", "source must be specified"),
    ({f"{TASK}.Artifacts.0.GetterMode": "zip"}, "service", f"{T}, artifact 1", "invalid artifact mode 'zip'"),
    ({f"{TASK}.Artifacts.0.RelativeDest": "../../etc"}, "service", f"{T}, artifact 1",
     "destination '../../etc' escapes the allocation directory"),
    ({f"{TASK}.Artifacts.0.GetterOptions": {"checksum": "sha256:abcd"}}, "service", f"{T}, artifact 1",
     "invalid sha256 checksum: 2 bytes, expected 32"),
    # Templates
    ({f"{TASK}.Templates.0.EmbeddedTmpl": ""}, "service", f"{T}, template 1",
     "must specify a source path or have an embedded template"),
    ({f"{TASK}.Templates.0.DestPath": ""}, "service", f"{T}, template 1", "must specify a destination"),
    ({f"{TASK}.Templates.0.DestPath": "../../../x"}, "service", f"{T}, template 1", "escapes the allocation directory"),
    ({f"{TASK}.Templates.0.ChangeMode": "reload"}, "service", f"{T}, template 1", "invalid change mode 'reload'"),
    ({f"{TASK}.Templates.0.ChangeMode": "signal", f"{TASK}.Templates.0.ChangeSignal": ""}, "service",
     f"{T}, template 1", "must specify signal value when change mode is signal"),
    ({f"{TASK}.Templates.0.ChangeMode": "script"}, "service", f"{T}, template 1",
     "must specify change script configuration"),
    ({f"{TASK}.Templates.0.Perms": "999"}, "service", f"{T}, template 1", "perms '999' is not an octal file mode"),
    ({f"{TASK}.Templates.0.Splay": -SECOND}, "service", f"{T}, template 1", "splay -1s must not be negative"),
    ({f"{TASK}.Templates.1": {"EmbeddedTmpl": "x", "DestPath": "local/app.env"}}, "service", T,
     "template 2 has the same destination as template 1"),
    # A template's data must parse, with functions the renderer has (found at register, not at start)
    ({f"{TASK}.Templates.0.EmbeddedTmpl": "a\n{{ nomadServise \"db\" }}"}, "service", f"{T}, template 1",
     'template: local/app.env:2: function "nomadServise" not defined'),
    ({f"{TASK}.Templates.0.EmbeddedTmpl": "{{ if .x }}\nno end"}, "service", f"{T}, template 1",
     "template: local/app.env:2: unexpected EOF"),
    ({f"{TASK}.Templates.0.EmbeddedTmpl": "[[ nope ]]", f"{TASK}.Templates.0.LeftDelim": "[[",
      f"{TASK}.Templates.0.RightDelim": "]]"}, "service", f"{T}, template 1",
     'template: local/app.env:1: function "nope" not defined'),
    # Scaling
    ({f"{TG}.Scaling": {"Min": 5, "Max": 2}, f"{TG}.Count": 3}, "service", G,
     "maximum count 2 must not be less than minimum count 5"),
    ({f"{TG}.Count": 10}, "service", G, "group count 10 must not be greater than the maximum count 5"),
    ({f"{TG}.Count": 0}, "service", G, "group count 0 must not be less than the minimum count 1"),
    ({f"{TG}.Scaling.Max": -1}, "service", G, "maximum count must be specified and non-negative"),
    ({f"{TG}.Scaling": {"Min": 1}}, "service", G, "maximum count must be specified and non-negative"),
    ({f"{TG}.Scaling.Type": "vertical"}, "service", G, "scaling policy type 'vertical' is not valid"),
    # Vault, identities, secrets
    ({f"{TASK}.Vault.ChangeMode": "reload"}, "service", f"{T}, vault", "unknown change mode 'reload'"),
    ({f"{TASK}.Vault.ChangeMode": "signal", f"{TASK}.Vault.ChangeSignal": ""}, "service", f"{T}, vault",
     "a signal must be specified"),
    ({f"{TASK}.Identities.0.Name": "bad name"}, "service", f"{T}, identity 'bad name'", "invalid name 'bad name'"),
    ({f"{TASK}.Identities.0.ChangeMode": "signal"}, "service", f"{T}, identity 'consul'",
     "change_signal must be specified"),
    ({f"{TASK}.Secrets": [{"Name": "db", "Provider": "nomad", "Path": "a"},
                          {"Name": "db", "Provider": "nomad", "Path": "b"}]}, "service", T, "duplicate secret 'db'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "job_type", "place", "words"),
    [pytest.param(*case, id=f"{case[1]}: {case[3]}") for case in CASES],
)
def test_rule(changes: dict[str, Any], job_type: str, place: str, words: str) -> None:
    problems = problems_of(changes, job_type)
    matching = [p for p in problems if words in p]
    assert matching, f"no problem mentions {words!r}: {problems}"
    # At the place, or within it (a check inherits its service's on_update).
    assert any(p.startswith(place + ": ") for p in matching), matching
    assert all(p.startswith(place) for p in matching), matching


def test_every_problem_of_the_blocks_at_once() -> None:
    problems = problems_of(
        {
            f"{NET}.DynamicPorts.0.To": -2,
            f"{CHECK}.Interval": 0,
            f"{TASK}.VolumeMounts.0.Volume": "nope",
            f"{TASK}.Templates.0.ChangeMode": "reload",
            f"{INIT_TASK}.Lifecycle.Hook": "prestop",
            f"{TG}.Scaling.Max": 1,
        }
    )
    assert len(problems) == 6, problems


@pytest.mark.parametrize(
    ("dest", "escapes"),
    [("local/x", False), ("/local/x", False), ("../alloc/data", False), ("../../x", True), ("..", False),
     ("a/../../..", True), ("/../../etc", True)],
)  # fmt: skip
def test_destinations_stay_in_the_alloc_dir(dest: str, escapes: bool) -> None:
    assert escapes_alloc_dir(dest) is escapes
