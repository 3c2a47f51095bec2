"""The client's rules: when a task restarts (Nomad's restart tracker), how a task's logs are read
and framed (Nomad's client fs logs, which the API forwards), a task's environment and `${...}`
interpolation (its task environment), the order an alloc's tasks start and are killed in (its
task lifecycle coordinator), a task's host volume mounts, and when an agent cut off from the
servers stops its allocs itself (Nomad's heartbeat stop)."""
