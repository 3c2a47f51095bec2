"""Nomad's `?filter=` on the list endpoints (drover.filter: go-bexpr's syntax), in one place.

As Nomad's paginator does it: the filter is applied after the namespace and prefix choose the
items and before the page is cut, so `?per_page=` counts the items that pass and
X-Nomad-NextToken names the next one that does. Each item is judged by its JSON document (the
object, with what its list stub shows). A filter that does not parse is a 400 before the read
(or its wait); one that cannot be applied to an item (`contains` on a number) is a 400 too,
with nothing written either way."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from fastapi import Request

from drover.api.blocking import Paged, paged, parse_per_page
from drover.api.errors import ApiError
from drover.api.views import as_json
from drover.filter import Filter, FilterError

T = TypeVar("T")
# How many items a filtered page reads at a time: a page of few matches among many items is
# found without loading the whole list at once.
BATCH = 512


def query_filter(request: Request) -> Filter | None:
    """The request's ?filter=, parsed (None without one); a 400 naming the problem else."""
    text = request.query_params.get("filter", "")
    if not text.strip():
        return None
    try:
        return Filter.parse(text)
    except FilterError as e:
        raise ApiError(400, f"failed to read filter expression: {e}") from None


def keep(f: Filter | None, items: Iterable[T], subject: Callable[[T], Any] = as_json) -> list[T]:
    """The items whose document (`subject`) passes `f` (all of them without a filter)."""
    if f is None:
        return list(items)
    try:
        return [item for item in items if f.matches(subject(item))]
    except FilterError as e:
        raise ApiError(400, f"failed to read result page: {e}") from None


def filtered(request: Request) -> Callable[[list[T]], list[T]]:
    """For a list answered whole: the request's filter applied to its items' documents. The
    filter is parsed here, so a bad one is refused before the read waits."""
    f = query_filter(request)
    return lambda items: keep(f, items)


def filtered_paged(
    request: Request,
    fetch: Callable[[str, int], list[Any]],
    token: Callable[[Any], str] = lambda item: item.id,
    shape: Callable[[list[Any]], list[Any]] = lambda items: items,
    subject: Callable[[Any, Any], Any] = lambda item, shown: as_json(shown),
) -> Callable[[], Paged]:
    """A paged list read (drover.api.blocking.paged) with ?filter=: `fetch(start, limit)` reads
    the items from the one whose `token` is `start`, `shape` makes the batch's answer items
    (the stubs the list shows), `subject(item, shown)` the document the filter judges."""
    f = query_filter(request)
    if f is None:
        read = paged(request, fetch, token)

        def unfiltered() -> Paged:
            page = read()
            return Paged(shape(page.items), page.next_token)

        return unfiltered

    def read_filtered() -> Paged:
        per_page = parse_per_page(request.query_params.get("per_page"))
        cursor = request.query_params.get("next_token", "")
        kept: list[tuple[Any, Any]] = []
        skip_first = False
        while True:
            items = fetch(cursor, BATCH + 1 if per_page else 0)
            batch = items[1:] if skip_first else items
            shown = shape(batch)
            kept.extend(
                (item, out) for item, out in zip(batch, shown, strict=True) if _passes(f, subject(item, out))
            )
            done = not per_page or len(items) < BATCH + 1
            if (per_page and len(kept) > per_page) or done or not batch:
                break
            # The next batch starts at this one's last item, which it skips.
            cursor, skip_first = token(batch[-1]), True
        if per_page and len(kept) > per_page:
            return Paged([out for _, out in kept[:per_page]], token(kept[per_page][0]))
        return Paged([out for _, out in kept])

    return read_filtered


def _passes(f: Filter, doc: Any) -> bool:
    try:
        return f.matches(doc)
    except FilterError as e:
        raise ApiError(400, f"failed to read result page: {e}") from None
