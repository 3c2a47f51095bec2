"""Nomad's ACL vocabulary: the coarse `policy` values, each rule's fine-grained capabilities,
and what a `policy` shorthand expands to (acl/policy.go; where Nomad's source and its docs
differ, its source: `read` grants neither read-logs nor read-fs, `scale` grants read-job)."""

from __future__ import annotations

POLICY_DENY = "deny"
POLICY_READ = "read"
POLICY_LIST = "list"
POLICY_WRITE = "write"
POLICY_SCALE = "scale"

# The `policy` values of namespace, node_pool, host_volume, agent, node, operator and quota
# rules (`scale` parses for each, but grants something only in a namespace).
POLICIES = frozenset({POLICY_DENY, POLICY_READ, POLICY_WRITE, POLICY_SCALE})
# A plugin rule's (its own set: `list` but not `scale`).
PLUGIN_POLICIES = frozenset({POLICY_DENY, POLICY_READ, POLICY_LIST, POLICY_WRITE})

# --- namespace capabilities ---
DENY = "deny"
LIST_JOBS = "list-jobs"
PARSE_JOB = "parse-job"
READ_JOB = "read-job"
SUBMIT_JOB = "submit-job"
DISPATCH_JOB = "dispatch-job"
READ_LOGS = "read-logs"
READ_FS = "read-fs"
ALLOC_EXEC = "alloc-exec"
ALLOC_NODE_EXEC = "alloc-node-exec"
ALLOC_LIFECYCLE = "alloc-lifecycle"
SENTINEL_OVERRIDE = "sentinel-override"
CSI_REGISTER_PLUGIN = "csi-register-plugin"
CSI_WRITE_VOLUME = "csi-write-volume"
CSI_READ_VOLUME = "csi-read-volume"
CSI_LIST_VOLUME = "csi-list-volume"
CSI_MOUNT_VOLUME = "csi-mount-volume"
HOST_VOLUME_CREATE = "host-volume-create"
HOST_VOLUME_REGISTER = "host-volume-register"
HOST_VOLUME_READ = "host-volume-read"
HOST_VOLUME_WRITE = "host-volume-write"
HOST_VOLUME_DELETE = "host-volume-delete"
LIST_SCALING_POLICIES = "list-scaling-policies"
READ_SCALING_POLICY = "read-scaling-policy"
READ_JOB_SCALING = "read-job-scaling"
SCALE_JOB = "scale-job"
SUBMIT_RECOMMENDATION = "submit-recommendation"
# Nomad 1.11's fine-grained job capabilities, split out of submit-job (which still satisfies
# every check that accepts one of them); no `policy` shorthand grants them.
REGISTER_JOB = "register-job"
REVERT_JOB = "revert-job"
DEREGISTER_JOB = "deregister-job"
PURGE_JOB = "purge-job"
EVALUATE_JOB = "evaluate-job"
PLAN_JOB = "plan-job"
TAG_JOB_VERSION = "tag-job-version"
STABLE_JOB = "stable-job"
FAIL_DEPLOYMENT = "fail-deployment"
PAUSE_DEPLOYMENT = "pause-deployment"
PROMOTE_DEPLOYMENT = "promote-deployment"
UNBLOCK_DEPLOYMENT = "unblock-deployment"
CANCEL_DEPLOYMENT = "cancel-deployment"
SET_ALLOC_HEALTH_DEPLOYMENT = "set-alloc-health-deployment"
GC_ALLOCATION = "gc-allocation"
PAUSE_ALLOCATION = "pause-allocation"
FORCE_PERIODIC_JOB = "force-periodic-job"
DELETE_SERVICE_REGISTRATION = "delete-service-registration"

NAMESPACE_CAPABILITIES = frozenset({
    DENY, LIST_JOBS, PARSE_JOB, READ_JOB, SUBMIT_JOB, DISPATCH_JOB, READ_LOGS, READ_FS, ALLOC_EXEC,
    ALLOC_NODE_EXEC, ALLOC_LIFECYCLE, SENTINEL_OVERRIDE, CSI_REGISTER_PLUGIN, CSI_WRITE_VOLUME,
    CSI_READ_VOLUME, CSI_LIST_VOLUME, CSI_MOUNT_VOLUME, HOST_VOLUME_CREATE, HOST_VOLUME_REGISTER,
    HOST_VOLUME_READ, HOST_VOLUME_WRITE, HOST_VOLUME_DELETE, LIST_SCALING_POLICIES, READ_SCALING_POLICY,
    READ_JOB_SCALING, SCALE_JOB, SUBMIT_RECOMMENDATION, REGISTER_JOB, REVERT_JOB, DEREGISTER_JOB,
    PURGE_JOB, EVALUATE_JOB, PLAN_JOB, TAG_JOB_VERSION, STABLE_JOB, FAIL_DEPLOYMENT, PAUSE_DEPLOYMENT,
    PROMOTE_DEPLOYMENT, UNBLOCK_DEPLOYMENT, CANCEL_DEPLOYMENT, SET_ALLOC_HEALTH_DEPLOYMENT, GC_ALLOCATION,
    PAUSE_ALLOCATION, FORCE_PERIODIC_JOB, DELETE_SERVICE_REGISTRATION,
})  # fmt: skip

_NAMESPACE_READ = (
    LIST_JOBS, PARSE_JOB, READ_JOB, CSI_LIST_VOLUME, CSI_READ_VOLUME, READ_JOB_SCALING,
    LIST_SCALING_POLICIES, READ_SCALING_POLICY, HOST_VOLUME_READ,
)  # fmt: skip
_NAMESPACE_WRITE = (
    *_NAMESPACE_READ, SCALE_JOB, SUBMIT_JOB, DISPATCH_JOB, READ_LOGS, READ_FS, ALLOC_EXEC, ALLOC_LIFECYCLE,
    CSI_MOUNT_VOLUME, CSI_WRITE_VOLUME, SUBMIT_RECOMMENDATION, HOST_VOLUME_CREATE,
)  # fmt: skip
NAMESPACE_POLICY_CAPABILITIES: dict[str, tuple[str, ...]] = {
    POLICY_DENY: (DENY,),
    POLICY_READ: _NAMESPACE_READ,
    POLICY_WRITE: _NAMESPACE_WRITE,
    POLICY_SCALE: (
        LIST_SCALING_POLICIES, READ_SCALING_POLICY, READ_JOB_SCALING, SCALE_JOB, READ_JOB, SUBMIT_RECOMMENDATION,
    ),
}  # fmt: skip
# Capabilities that bring others with them (expandNamespaceCapabilities).
IMPLIED_NAMESPACE_CAPABILITIES: dict[str, tuple[str, ...]] = {
    HOST_VOLUME_WRITE: (HOST_VOLUME_REGISTER, HOST_VOLUME_CREATE, HOST_VOLUME_DELETE, HOST_VOLUME_READ),
    HOST_VOLUME_REGISTER: (HOST_VOLUME_CREATE, HOST_VOLUME_READ),
    HOST_VOLUME_CREATE: (HOST_VOLUME_READ,),
}

# --- variables path capabilities (inside a namespace rule) ---
VARIABLES_LIST = "list"
VARIABLES_READ = "read"
VARIABLES_WRITE = "write"
VARIABLES_DESTROY = "destroy"
VARIABLES_DENY = "deny"
VARIABLES_CAPABILITIES = frozenset(
    {VARIABLES_LIST, VARIABLES_READ, VARIABLES_WRITE, VARIABLES_DESTROY, VARIABLES_DENY}
)

# --- node pool capabilities ---
NODE_POOL_DELETE = "delete"
NODE_POOL_DENY = "deny"
NODE_POOL_READ = "read"
NODE_POOL_WRITE = "write"
NODE_POOL_CAPABILITIES = frozenset({NODE_POOL_DELETE, NODE_POOL_DENY, NODE_POOL_READ, NODE_POOL_WRITE})
NODE_POOL_POLICY_CAPABILITIES: dict[str, tuple[str, ...]] = {
    POLICY_DENY: (NODE_POOL_DENY,),
    POLICY_READ: (NODE_POOL_READ,),
    POLICY_WRITE: (NODE_POOL_DELETE, NODE_POOL_READ, NODE_POOL_WRITE),
}

# --- host volume capabilities ---
HOST_VOLUME_DENY = "deny"
MOUNT_READONLY = "mount-readonly"
MOUNT_READWRITE = "mount-readwrite"
HOST_VOLUME_CAPABILITIES = frozenset({HOST_VOLUME_DENY, MOUNT_READONLY, MOUNT_READWRITE})
HOST_VOLUME_POLICY_CAPABILITIES: dict[str, tuple[str, ...]] = {
    POLICY_DENY: (HOST_VOLUME_DENY,),
    POLICY_READ: (MOUNT_READONLY,),
    POLICY_WRITE: (MOUNT_READONLY, MOUNT_READWRITE),
}

# --- operator capabilities ---
OPERATOR_DENY = "deny"
SNAPSHOT_SAVE = "snapshot-save"
LICENSE_READ = "license-read"
KEYRING_ROTATE = "keyring-rotate"
KEYRING_READ = "keyring-read"
KEYRING_DELETE = "keyring-delete"
OPERATOR_CAPABILITIES = frozenset(
    {OPERATOR_DENY, SNAPSHOT_SAVE, LICENSE_READ, KEYRING_ROTATE, KEYRING_READ, KEYRING_DELETE}
)
OPERATOR_POLICY_CAPABILITIES: dict[str, tuple[str, ...]] = {
    POLICY_DENY: (OPERATOR_DENY,),
    POLICY_READ: (LICENSE_READ, KEYRING_READ),
    POLICY_WRITE: (SNAPSHOT_SAVE, LICENSE_READ, KEYRING_ROTATE, KEYRING_READ, KEYRING_DELETE),
}


def expand_variables(capabilities: tuple[str, ...]) -> tuple[str, ...]:
    """A path rule's capabilities as they apply: `deny` alone if present, `read` with `list`."""
    if VARIABLES_DENY in capabilities:
        return (VARIABLES_DENY,)
    if VARIABLES_READ in capabilities and VARIABLES_LIST not in capabilities:
        return (*capabilities, VARIABLES_LIST)
    return capabilities


def max_privilege(a: str, b: str) -> str:
    """The coarse policy granting more of two (deny above all, then write, read, list); ""
    when neither is one of those (`scale` grants nothing to a node, agent or operator)."""
    for level in (POLICY_DENY, POLICY_WRITE, POLICY_READ, POLICY_LIST):
        if level in (a, b):
            return level
    return ""
