"""What the API appends: each command reads what it needs of the cluster (`reads`), checks the
request, and returns the events to append in one transaction (`drover.control.change`), or
refuses (`drover.control.errors`). A command that does what a leader loop would (a rollback, a
periodic launch, a node-update eval) uses that loop's rule from `drover.control.leader`."""
