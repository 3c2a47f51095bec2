"""Nomad's HCL2 jobspecs, parsed with python-hcl2 and evaluated here into the Job as Nomad's
API JSON (what `nomad job run -output` prints, not yet canonicalized): variables, locals,
functions, templates, dynamic blocks; runtime interpolations left as text. Pure: the caller
hands in the variables, the var files' contents, the environment, the files the filesystem
functions see and the randomness bcrypt() and uuidv4() take.
Plain HCL documents (an agent's configuration) are read the same way, as plain data."""

from drover.jobspec.document import parse_document
from drover.jobspec.errors import JobspecError
from drover.jobspec.functions import Files, Random
from drover.jobspec.job import parse

__all__ = ["Files", "JobspecError", "Random", "parse", "parse_document"]
