"""Documents encoded for the wire once per change, not once per request.

A read of a node or a job used to decode the stored document into its model, dump the model
back to JSON's values and encode those (about 120 us for a node on the benchmarks' host,
docs/experiments/2026-11-29-request-floor.md). The answer is a function of the stored text
(and, for a job, of the liveness of its allocs and evals its Status is derived from), so it is
kept by that text: until the object changes, every read answers the same bytes. So is each
alloc's stub in a list of allocs. The newest answers are kept (the oldest dropped first);
documents over `largest` characters are encoded every time.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Hashable

from drover.api.views import alloc_stub, as_json
from drover.model import Allocation, Job, Node
from drover.model.job import derive_job_status
from drover.runtime.store.docreads import JobDoc


class Kept:
    """The newest `size` encodings, by key."""

    def __init__(self, size: int, largest: int = 256 * 1024) -> None:
        self.size = size
        self.largest = largest
        self._answers: dict[Hashable, bytes] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, doc: str, encode: Callable[[], bytes]) -> bytes:
        found = self._answers.get(key)
        if found is not None:
            return found
        body = encode()
        if len(doc) <= self.largest:
            with self._lock:
                self._answers[key] = body
                while len(self._answers) > self.size:
                    del self._answers[next(iter(self._answers))]
        return body


class Encoded:
    def __init__(self, size: int = 2048, stubs: int = 4096) -> None:
        self.answers = Kept(size)
        self.stubs = Kept(stubs)

    def node(self, doc: str) -> bytes:
        return self.answers.get((Node, doc), doc, lambda: _encode(Node.model_validate_json(doc)))

    def alloc_stubs(self, docs: list[str]) -> bytes:
        """A list of allocs' stubs (drover.api.views.alloc_stub), as a JSON array."""
        get = self.stubs.get
        return b"[" + b",".join(get(d, d, functools.partial(_alloc_stub, d)) for d in docs) + b"]"

    def job(self, found: JobDoc) -> bytes:
        """The job with its Status derived now, as Nomad shows it."""

        def encode() -> bytes:
            job = Job.model_validate_json(found.doc)
            status = derive_job_status(
                job,
                has_allocs=found.live_allocs is not None,
                live_allocs=bool(found.live_allocs),
                has_evals=found.live_evals is not None,
                live_evals=bool(found.live_evals),
            )
            return _encode(job.model_copy(update={"status": status}))

        return self.answers.get((Job, found.doc, found.live_allocs, found.live_evals), found.doc, encode)


def _alloc_stub(doc: str) -> bytes:
    return json.dumps(alloc_stub(Allocation.model_validate_json(doc))).encode()


def _encode(model: Node | Job) -> bytes:
    # As every other read encodes its answer (drover.api.blocking).
    return json.dumps(as_json(model)).encode()
