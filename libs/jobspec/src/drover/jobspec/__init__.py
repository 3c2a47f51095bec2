"""Nomad's HCL2 jobspecs, parsed with python-hcl2 and evaluated here into the Job as Nomad's
API JSON (what `nomad job run -output` prints, not yet canonicalized): variables, locals,
functions, templates, dynamic blocks; runtime interpolations left as text. Pure: the caller
hands in the variables, the var files' contents, the environment and a reader for file().
Plain HCL documents (an agent's configuration) are read the same way, as plain data."""

from drover.jobspec.document import parse_document
from drover.jobspec.errors import JobspecError
from drover.jobspec.job import parse

__all__ = ["JobspecError", "parse", "parse_document"]
