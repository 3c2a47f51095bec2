"""PostgreSQL advisory-lock keys, each defined here once: two uses that shared a key would
exclude each other for no reason."""

# Held by every append transaction while it assigns positions and until it commits: positions
# commit in order (drover.runtime.store.eventstore).
EVENTS_LOCK_KEY = 4_646_000
# Plan applier leadership: one planner verifies and commits plans (drover.planner).
PLANNER_LOCK_KEY = 4_646_001
# The leader loops' leadership: one instance writes missed heartbeats, drains, deployments, job
# restarts, periodic launches and failed evals (drover.leader).
LEADER_LOCK_KEY = 4_646_002
# Garbage collector leadership: one collector writes and runs the core evals (drover.gc).
GC_LOCK_KEY = 4_646_003
# Migrations: two processes migrating at once (`drover up` starts several) take turns.
MIGRATIONS_LOCK_KEY = 7_070_707
