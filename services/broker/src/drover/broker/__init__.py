"""The eval broker service (and the event relay): turns the log's evals into ready work."""
