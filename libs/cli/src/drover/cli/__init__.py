"""The `drover` command line."""
