"""Collection functions, as cty's standard library has them. A list, tuple or set is a Python
list (a set's elements each once, in cty's order), a map or object a dict. Note cty's `index`
looks a key up (index(list, 1) is its second element), `length` takes no string, and `lookup`
needs its default."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import (
    Fn,
    a,
    as_set,
    distinct,
    equal,
    key,
    mapping,
    number,
    sequence,
    string,
    strings,
    takes,
    unify,
    whole,
)
from drover.jobspec.values import number as hcl_number
from drover.jobspec.values import type_name

# Drover's bound on setproduct: a larger product would only exhaust the parser.
_MAX_PRODUCT = 100_000


def _length(collection: Any) -> int:
    if not isinstance(collection, (list, dict)):
        raise FunctionError(f"collection must be a list, a map or a tuple, not {a(collection)}")
    return len(collection)


def _element(lst: Any, index: Any) -> Any:
    i = whole(index, "index")
    if not isinstance(lst, list):
        raise FunctionError(f"cannot read elements from {a(lst)}")
    if not lst:
        raise FunctionError("cannot use element function with an empty list")
    return lst[i % len(lst)]  # a negative index counts back from the end, as in cty


def _index(collection: Any, key: Any) -> Any:
    if isinstance(collection, list):
        if isinstance(key, bool) or not isinstance(key, (int, float)):
            raise FunctionError("key for list must be number")
        if not isinstance(key, int) or not 0 <= key < len(collection):
            raise FunctionError("invalid index")
        return collection[key]
    if isinstance(collection, dict):
        if not isinstance(key, str):
            raise FunctionError("key for map must be string")
        if key not in collection:
            raise FunctionError("invalid index")
        return collection[key]
    raise FunctionError("collection must be a list, a map or a tuple")


def _slice(lst: Any, start: Any, end: Any) -> list[Any]:
    items = sequence(lst, "list")
    first, last = whole(start, "start_index"), whole(end, "end_index")
    if first < 0:
        raise FunctionError("start index must not be less than zero")
    if first > len(items):
        raise FunctionError("start index must not be greater than the length of the list")
    if last < 0:
        raise FunctionError("end index must not be less than zero")
    if last > len(items):
        raise FunctionError("end index must not be greater than the length of the list")
    if first > last:
        raise FunctionError("start index must not be greater than end index")
    return items[first:last]


def _contains(lst: Any, value: Any) -> bool:
    if not isinstance(lst, list):
        raise FunctionError("argument must be list, tuple, or set")
    return any(equal(value, item) for item in lst)


def _lookup(m: Any, key: Any, default: Any) -> Any:
    if not isinstance(m, dict):
        raise FunctionError("lookup() requires a map as the first argument")
    return m.get(string(key, "key"), default)


def _merge(*maps: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in maps:
        if m is None:
            continue
        if not isinstance(m, dict):
            raise FunctionError(f"arguments must be maps or objects, got {a(m)}")
        out.update(m)
    return out


def _zipmap(keys: Any, values: Any) -> dict[str, Any]:
    names, items = strings(keys, "keys"), values
    if not isinstance(items, list):
        raise FunctionError("values argument must be a list or tuple value")
    if len(names) != len(items):
        raise FunctionError(f"number of keys ({len(names)}) does not match number of values ({len(items)})")
    out: dict[str, Any] = {}
    for i, (name, value) in enumerate(zip(names, items, strict=True)):
        if name is None:
            raise FunctionError(f"keys list has null value at index {i}")
        out[name] = value
    return out


def _concat(*seqs: Any) -> list[Any]:
    if not seqs:
        raise FunctionError("at least one argument is required")
    out: list[Any] = []
    for seq in seqs:
        if not isinstance(seq, list):
            raise FunctionError(f"all arguments must be lists or tuples; got {type_name(seq)}")
        out.extend(seq)
    return out


def _flatten(lst: Any) -> list[Any]:
    if not isinstance(lst, list):
        raise FunctionError("can only flatten lists, sets and tuples")
    out: list[Any] = []
    for item in lst:
        out.extend(_flatten(item) if isinstance(item, list) else [item])
    return out


def _distinct(lst: Any) -> list[Any]:
    return distinct(unify(sequence(lst, "list")))


def _chunklist(lst: Any, size: Any) -> list[list[Any]]:
    items, n = unify(sequence(lst, "list")), whole(size, "size")
    if n < 0:
        raise FunctionError("the size argument must be positive")
    if not items:
        return []
    if n == 0:
        return [items]
    return [items[i : i + n] for i in range(0, len(items), n)]


def _coalesce(*values: Any) -> Any:
    kinds = {type_name(v) for v in values if v is not None}
    if len(kinds) > 1 and not kinds <= {"string", "number", "bool"}:
        raise FunctionError("all arguments must have the same type")
    for v in unify(list(values)):
        if v is not None:
            return v
    raise FunctionError("no non-null arguments")


def _coalescelist(*lists: Any) -> list[Any]:
    if not lists:
        raise FunctionError("at least one argument is required")
    if any(lst is not None and not isinstance(lst, list) for lst in lists):
        raise FunctionError("coalescelist arguments must be lists or tuples")
    for lst in lists:
        if lst:
            return list(lst)
    raise FunctionError("no non-null arguments")


def _range(*args: Any) -> list[int | float]:
    nums = [number(a, "params") for a in args]
    start: int | float
    end: int | float
    step: int | float
    if len(nums) == 1:
        start, end, step = 0, nums[0], (-1 if nums[0] < 0 else 1)
    elif len(nums) == 2:
        start, end, step = nums[0], nums[1], (-1 if nums[1] < nums[0] else 1)
    elif len(nums) == 3:
        start, end, step = nums
    else:
        raise FunctionError("must have one, two, or three arguments")
    if step == 0:
        raise FunctionError("step must not be zero")
    if step < 0 and end > start:
        raise FunctionError("end must be less than start when step is negative")
    if step > 0 and end < start:
        raise FunctionError("end must be greater than start when step is positive")
    # In decimals, as cty's exact numbers add: 0.1 three times is 0.3, not 0.30000000000000004.
    first, by, last = (Decimal(repr(n)) for n in (start, step, end))
    out: list[int | float] = []
    at = first
    while (at < last) if step > 0 else (at > last):
        if len(out) >= 1024:
            raise FunctionError(
                "more than 1024 values were generated; either decrease the difference between "
                "start and end or use a smaller step"
            )
        out.append(hcl_number(int(at) if at == at.to_integral_value() else float(at)))
        at += by
    return out


def _setproduct(*sets: Any) -> list[list[Any]]:
    if len(sets) < 2:
        raise FunctionError("at least two arguments are required")
    if any(not isinstance(s, list) for s in sets):
        raise FunctionError("a set or a list is required")
    size = math.prod(len(s) for s in sets)
    if size > _MAX_PRODUCT:
        raise FunctionError(f"the product would have {size} elements (at most {_MAX_PRODUCT})")
    product: list[list[Any]] = [[]]
    for s in sets:
        product = [[*row, item] for row in product for item in unify(s)]
    return product


def _set_operation(union: bool) -> Fn:
    def fn(first: Any, *others: Any) -> list[Any]:
        sets = [sequence(s, "sets") for s in (first, *others)]
        elements = unify([item for s in sets for item in s])
        # Back into their sets, each element converted to the type they all share.
        at, converted = 0, []
        for s in sets:
            converted.append(as_set(elements[at : at + len(s)]))
            at += len(s)
        out = converted[0]
        for s in converted[1:]:
            if union:
                out = out + s
            else:
                keys = {key(x) for x in s}
                out = [x for x in out if key(x) in keys]
        return as_set(out)

    return takes(fn, "first_set", rest="other_sets")


def _sort(lst: Any) -> list[str]:
    items = strings(lst, "list")
    for i, item in enumerate(items):
        if item is None:
            raise FunctionError(f"given list element {i} is null; a null string cannot be sorted")
    return sorted(item for item in items if item is not None)


def _compact(lst: Any) -> list[str]:
    return [item for item in strings(lst, "list") if item]


def table() -> dict[str, Fn]:
    return {
        "length": takes(_length, "collection"),
        "element": takes(_element, "list", "index"),
        "index": takes(_index, "collection", "key"),
        "slice": takes(_slice, "list", "start_index", "end_index"),
        "contains": takes(_contains, "list", "value"),
        "keys": takes(lambda m: sorted(mapping(m, "inputMap")), "inputMap"),
        "values": takes(lambda m: [v for _, v in sorted(mapping(m, "mapping").items())], "mapping"),
        "lookup": takes(_lookup, "inputMap", "key", "default"),
        "merge": takes(_merge, rest="maps"),
        "zipmap": takes(_zipmap, "keys", "values"),
        "concat": takes(_concat, rest="seqs"),
        "flatten": takes(_flatten, "list"),
        "distinct": takes(_distinct, "list"),
        "chunklist": takes(_chunklist, "list", "size"),
        "coalesce": takes(_coalesce, rest="vals"),
        "coalescelist": takes(_coalescelist, rest="vals"),
        "compact": takes(_compact, "list"),
        "range": takes(_range, rest="params"),
        "setproduct": takes(_setproduct, rest="sets"),
        "setunion": _set_operation(union=True),
        "setintersection": _set_operation(union=False),
        "sort": takes(_sort, "list"),
    }
