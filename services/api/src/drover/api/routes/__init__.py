"""One router per Nomad resource; each handler decodes its request and calls one command
(drover.control) or one read."""
