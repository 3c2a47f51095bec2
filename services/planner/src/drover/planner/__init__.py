"""The plan applier: strictly serial, one leader with hot standbys, fenced in the database."""
