"""The eval broker service: turns the log's evals into ready work."""
