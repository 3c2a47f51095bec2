"""What each route of the API requires of a request's token, in one table: (method, path
template) -> the capabilities that let it through, any one of them sufficing (an entry joined
with `+` needs all its parts). In Nomad's words (nomad/*_endpoint.go, command/agent/*):

- `namespace:<capability>` in the request's namespace (`?namespace=`, "default"); the entry
  says when it is the job's in the body (`body`: where the handler registers it, ?namespace=
  first), the one the path names (`path`) or the namespace of the alloc, eval or deployment the path names
  (`alloc`, `eval`, `deployment`), as Nomad checks the object's own
  (`namespace:any`: anything granted there, as reading a namespace needs)
- `variables:<list|read|write|destroy>` on the variable path the route names in its namespace
- `node:read|write`, `agent:read|write`, `operator:read|write|<capability>`, `quota:read|write`,
  `plugin:read|list`, `node_pool:<capability>` (the pool the path names: `{node_pool}`, `{name}`)
- `management`: a management token
- `token`: any token that resolves, the anonymous one too (the handler decides the rest:
  the event stream checks each topic, an ACL list shows what the token may see)
- `acl:policy` (a management token, or one holding the policy the path names), `acl:token`
  (a management token, or the token whose AccessorID the path names)
- `none`: no token needed, and none looked at

A list answered across namespaces keeps only the items whose namespace (variables: whose path)
the token may read (`filter`), as Nomad filters them; the namespace catalogue keeps those the
token is granted anything in. drover.api.guard applies the table; a
test walks every route of the app and fails for one the table does not name.

Drover's own client routes (/v1/drover/*) take `node:write`: a node's secret holds it (its
client's identity, drover.api.aclresolve), and each call is then checked against the nodes it
speaks for (drover.api.nodeauth); registering a new node takes an ACL token with node:write,
as Nomad's node introduction does."""

from __future__ import annotations

from dataclasses import dataclass, field

Capability = tuple[str, str]


@dataclass(frozen=True)
class Need:
    # Alternatives, any one sufficing; each a conjunction of (scope, operation).
    any_of: tuple[tuple[Capability, ...], ...]
    # Where the namespace comes from: "query", "body" (where the handler puts the Job: the
    # query's, the request's, the Job's), "var-body" (the query's, else the body's Namespace),
    # "path" (`{name}`), "alloc", "eval", "deployment".
    namespace: str = "query"
    # A list's items kept by their Namespace: "need" (it grants what this entry asks of a
    # namespace), or a capability; "variables": by their path's list rule.
    filter: str = ""
    # With ?purge=true (a job's DELETE): what the purge needs instead.
    purge: Need | None = None
    scopes: frozenset[str] = field(default=frozenset(), compare=False)


def need(*alternatives: str, ns: str = "query", filter: str = "", purge: Need | None = None) -> Need:
    parsed = tuple(
        tuple((part.partition(":")[0], part.partition(":")[2]) for part in alt.split("+"))
        for alt in alternatives
    )
    scopes = frozenset(scope for alt in parsed for scope, _ in alt)
    return Need(parsed, ns, filter, purge, scopes)


NONE = need("none")
TOKEN = need("token")
MANAGEMENT = need("management")
NODE_READ = need("node:read")
NODE_WRITE = need("node:write")
CLIENT = NODE_WRITE  # Drover's client routes (/v1/drover/*)
READ_JOB = need("namespace:read-job")
# A list across namespaces (`?namespace=*`, or one that lists every namespace's).
LIST = need("namespace:read-job", filter="need")
SUBMIT = need("namespace:submit-job", "namespace:register-job", ns="body")
LIFECYCLE = need("namespace:alloc-lifecycle", "namespace:submit-job")
J = "/v1/job/{job_id:path}"


def _both(path: str, n: Need) -> dict[tuple[str, str], Need]:
    """A write Nomad takes as PUT or POST."""
    return {("PUT", path): n, ("POST", path): n}


ROUTES: dict[tuple[str, str], Need] = {
    # The API's own documents, the leader, the metrics: open, as Nomad's status and metrics.
    ("GET", "/openapi.json"): NONE,
    ("HEAD", "/openapi.json"): NONE,
    ("GET", "/docs"): NONE,
    ("HEAD", "/docs"): NONE,
    ("GET", "/docs/oauth2-redirect"): NONE,
    ("HEAD", "/docs/oauth2-redirect"): NONE,
    ("GET", "/redoc"): NONE,
    ("HEAD", "/redoc"): NONE,
    ("GET", "/v1/status/leader"): NONE,
    ("GET", "/v1/metrics"): NONE,
    # Jobs (Job.*)
    ("GET", "/v1/jobs"): need("namespace:list-jobs", filter="need"),
    **_both("/v1/jobs", SUBMIT),
    **_both(J, SUBMIT),
    ("GET", J): READ_JOB,
    ("GET", f"{J}/versions"): READ_JOB,
    ("GET", f"{J}/allocations"): READ_JOB,
    ("GET", f"{J}/evaluations"): READ_JOB,
    ("GET", f"{J}/deployments"): READ_JOB,
    ("GET", f"{J}/deployment"): READ_JOB,
    ("GET", f"{J}/summary"): READ_JOB,
    ("DELETE", J): need(
        "namespace:submit-job",
        "namespace:purge-job",
        "namespace:deregister-job",
        purge=need("namespace:submit-job", "namespace:purge-job"),
    ),
    **_both(f"{J}/evaluate", need("namespace:submit-job", "namespace:evaluate-job")),
    **_both(f"{J}/plan", need("namespace:submit-job", "namespace:plan-job", ns="body")),
    **_both("/v1/jobs/parse", need("namespace:parse-job", "namespace:submit-job")),
    **_both("/v1/validate/job", need("namespace:read-job", ns="body")),
    **_both(f"{J}/revert", need("namespace:submit-job", "namespace:revert-job")),
    **_both(f"{J}/stable", need("namespace:submit-job", "namespace:stable-job")),
    ("GET", f"{J}/scale"): need("namespace:read-job", "namespace:read-job-scaling"),
    **_both(f"{J}/scale", need("namespace:scale-job", "namespace:submit-job")),
    **_both(
        f"{J}/periodic/force",
        need("namespace:dispatch-job", "namespace:submit-job", "namespace:force-periodic-job"),
    ),
    **_both(f"{J}/dispatch", need("namespace:dispatch-job")),
    # Scaling policies (Scaling.*)
    ("GET", "/v1/scaling/policies"): need(
        "namespace:list-scaling-policies", "namespace:list-jobs+namespace:read-job", filter="need"
    ),
    ("GET", "/v1/scaling/policy/{policy_id}"): need(
        "namespace:read-scaling-policy", "namespace:list-jobs+namespace:read-job"
    ),
    # Job restarts (Drover's: what Nomad's CLI does with alloc restarts)
    **_both(f"{J}/restart", LIFECYCLE),
    ("GET", f"{J}/restarts"): READ_JOB,
    ("GET", f"{J}/restart/{{restart_id}}"): READ_JOB,
    ("DELETE", f"{J}/restart/{{restart_id}}"): LIFECYCLE,
    **_both(f"{J}/restart/{{restart_id}}/pause", LIFECYCLE),
    **_both(f"{J}/restart/{{restart_id}}/resume", LIFECYCLE),
    # Service registrations (ServiceRegistration.*)
    ("GET", "/v1/services"): LIST,
    ("GET", "/v1/service/{name}"): READ_JOB,
    ("DELETE", "/v1/service/{name}/{service_id}"): need(
        "namespace:submit-job", "namespace:delete-service-registration"
    ),
    ("GET", f"{J}/services"): READ_JOB,
    ("GET", "/v1/allocation/{alloc_id}/services"): need("namespace:read-job", ns="alloc"),
    ("GET", "/v1/client/allocation/{alloc_id}/checks"): need("namespace:read-job", ns="alloc"),
    **_both("/v1/drover/services", CLIENT),
    # Allocations (Alloc.*, ClientAllocations.*, FileSystem.*)
    ("GET", "/v1/allocations"): LIST,
    ("GET", "/v1/allocation/{alloc_id}"): need("namespace:read-job", ns="alloc"),
    **_both("/v1/allocation/{alloc_id}/stop", need("namespace:alloc-lifecycle", ns="alloc")),
    **_both("/v1/client/allocation/{alloc_id}/restart", need("namespace:alloc-lifecycle", ns="alloc")),
    ("GET", "/v1/client/fs/logs/{alloc_id}"): need("namespace:read-logs", "namespace:read-fs", ns="alloc"),
    ("GET", "/v1/client/allocation/{alloc_id}/stats"): need("namespace:read-job", ns="alloc"),
    # Evaluations (Eval.*)
    ("GET", "/v1/evaluations"): LIST,
    ("GET", "/v1/evaluations/count"): need("namespace:read-job"),
    ("GET", "/v1/evaluation/{eval_id}"): need("namespace:read-job", ns="eval"),
    ("GET", "/v1/evaluation/{eval_id}/allocations"): need("namespace:read-job", ns="eval"),
    # Deployments (Deployment.*)
    ("GET", "/v1/deployments"): LIST,
    ("GET", "/v1/deployment/{deployment_id}"): need("namespace:read-job", ns="deployment"),
    ("GET", "/v1/deployment/allocations/{deployment_id}"): need("namespace:read-job", ns="deployment"),
    **_both(
        "/v1/deployment/promote/{deployment_id}",
        need("namespace:submit-job", "namespace:promote-deployment", ns="deployment"),
    ),
    **_both(
        "/v1/deployment/pause/{deployment_id}",
        need("namespace:submit-job", "namespace:pause-deployment", ns="deployment"),
    ),
    **_both(
        "/v1/deployment/fail/{deployment_id}",
        need("namespace:submit-job", "namespace:fail-deployment", ns="deployment"),
    ),
    # Nodes (Node.*): a node's allocs are those the token may read.
    ("GET", "/v1/nodes"): NODE_READ,
    ("GET", "/v1/node/{node_id}"): NODE_READ,
    ("GET", "/v1/node/{node_id}/allocations"): need("node:read", filter="read-job"),
    **_both("/v1/node/{node_id}/eligibility", NODE_WRITE),
    **_both("/v1/node/{node_id}/drain", NODE_WRITE),
    **_both("/v1/node/{node_id}/purge", NODE_WRITE),
    # System (System.*)
    **_both("/v1/system/gc", MANAGEMENT),
    # Drover's client routes: what a node agent calls.
    **_both("/v1/drover/node/register", CLIENT),
    **_both("/v1/drover/node/{node_id}/heartbeat", CLIENT),
    **_both("/v1/drover/heartbeats", CLIENT),
    **_both("/v1/drover/node/{node_id}/status", CLIENT),
    **_both("/v1/drover/allocs/status", CLIENT),
    ("GET", "/v1/drover/allocs/changes"): CLIENT,
    # The event stream: each topic as Nomad's Event.Stream checks it (drover.api.streamacl).
    ("GET", "/v1/event/stream"): TOKEN,
    # Search (Search.*): any token; each context and item shown where its ACL reads it
    # (drover.api.search), a context named alone and not readable a 403, as Nomad's.
    **_both("/v1/search", TOKEN),
    **_both("/v1/search/fuzzy", TOKEN),
    # Variables (Variables.*): by path rule; the list keeps the paths the token may list.
    # The cluster's own endpoints (command/agent/agent_endpoint.go, operator_endpoint.go).
    ("GET", "/v1/agent/self"): need("agent:read"),
    ("GET", "/v1/agent/members"): NODE_READ,
    ("GET", "/v1/agent/health"): NONE,
    ("GET", "/v1/regions"): NONE,
    ("GET", "/v1/status/peers"): NONE,
    **_both("/v1/agent/join", need("agent:write")),
    **_both("/v1/agent/force-leave", need("agent:write")),
    ("GET", "/v1/agent/servers"): need("agent:read"),
    **_both("/v1/agent/servers", need("agent:write")),
    # Raft's configuration and its peers: a management token's, not operator read/write
    # (nomad/operator_endpoint.go: RaftGetConfiguration, RaftRemovePeerByID).
    ("GET", "/v1/operator/raft/configuration"): MANAGEMENT,
    ("DELETE", "/v1/operator/raft/peer"): MANAGEMENT,
    ("GET", "/v1/operator/scheduler/configuration"): need("operator:read"),
    **_both("/v1/operator/scheduler/configuration", need("operator:write")),
    # Node pools (nomad/node_pool_endpoint.go): listed where readable, each by its name's rule; a
    # pool named in the body only is written by management here.
    ("GET", "/v1/node/pools"): need("token", filter="node_pools"),
    **_both("/v1/node/pools", MANAGEMENT),
    ("GET", "/v1/node/pool/{name}"): need("node_pool:read"),
    **_both("/v1/node/pool/{name}", need("node_pool:write")),
    ("DELETE", "/v1/node/pool/{name}"): need("node_pool:delete"),
    ("GET", "/v1/node/pool/{name}/nodes"): need("node_pool:read+node:read"),
    ("GET", "/v1/node/pool/{name}/jobs"): need("node_pool:read+namespace:list-jobs", filter="need"),
    # Namespaces: listed where the token is granted anything, read there, written by management
    # (nomad/namespace_endpoint.go).
    ("GET", "/v1/namespaces"): need("token", filter="namespaces"),
    ("GET", "/v1/namespace/{name}"): need("namespace:any", ns="path"),
    **_both("/v1/namespace", MANAGEMENT),
    **_both("/v1/namespace/{name}", MANAGEMENT),
    ("DELETE", "/v1/namespace/{name}"): MANAGEMENT,
    ("GET", "/v1/vars"): need("variables:list", filter="variables"),
    ("GET", "/v1/var/{path:path}"): need("variables:read"),
    **_both("/v1/var/{path:path}", need("variables:write", ns="var-body")),
    ("DELETE", "/v1/var/{path:path}"): need("variables:destroy"),
    # The keyring (Keyring.*)
    ("GET", "/v1/operator/keyring/keys"): need("operator:keyring-read"),
    **_both("/v1/operator/keyring/rotate", need("operator:keyring-rotate")),
    # ACL (ACL.*): the bootstrap open (it refuses a second itself), the rest management's but
    # what a token may read of itself and of its policies.
    **_both("/v1/acl/bootstrap", NONE),
    ("GET", "/v1/acl/policies"): TOKEN,
    ("GET", "/v1/acl/policy/{name}"): need("acl:policy"),
    **_both("/v1/acl/policy/{name}", MANAGEMENT),
    ("DELETE", "/v1/acl/policy/{name}"): MANAGEMENT,
    ("GET", "/v1/acl/tokens"): MANAGEMENT,
    **_both("/v1/acl/token", MANAGEMENT),
    ("GET", "/v1/acl/token/self"): TOKEN,
    ("GET", "/v1/acl/token/{accessor_id}"): need("acl:token"),
    **_both("/v1/acl/token/{accessor_id}", MANAGEMENT),
    ("DELETE", "/v1/acl/token/{accessor_id}"): MANAGEMENT,
}
