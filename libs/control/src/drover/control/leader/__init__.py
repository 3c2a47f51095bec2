"""What the leader's loops decide (Nomad's leader: the heartbeater, the node drainer, the
deployment watcher, the job restart watcher, the periodic dispatcher) and what the core garbage
collector collects, each a function of the state and `now`."""
