"""The functions a jobspec may call: Nomad's jobspec function map, each behaving as Nomad's
(cty's standard library and HashiCorp's function libraries), in rooms by family. try, can and
convert take expressions, not values: drover.jobspec.calls evaluates them.

A parse must give the same job every time from the same inputs, so what comes from outside
is handed in by the caller: the file system (`Files`, for the eight filesystem functions) and
randomness (`random(n)`, n bytes, for bcrypt's salt and uuidv4). Without them those functions
are refused with an error, never made up.

Where Drover differs: what would only exhaust a parse is refused (a format width or precision
over 1024, indent over 1024 spaces, a setproduct over 100,000 elements, a bcrypt cost over 16,
a YAML document standing for over 100,000 values, parseint over 4,300 digits, a regex_replace
running over a second), and so are infinities (log(0, 10), YAML's .inf), which Drover's numbers
do not hold. md5 and sha1 are offered even where Nomad's FIPS builds leave them out."""

from __future__ import annotations

from drover.jobspec.functions import (
    collections,
    crypto,
    dates,
    encoding,
    filesystem,
    format,
    network,
    numbers,
    strings,
    yamlcodec,
)
from drover.jobspec.functions.crypto import Random
from drover.jobspec.functions.filesystem import Files
from drover.jobspec.functions.params import Fn


def functions(files: Files | None = None, base_dir: str = "", random: Random | None = None) -> dict[str, Fn]:
    """The function table: file functions through `files` (a relative path taken from
    `base_dir`, the jobspec's directory), bcrypt and uuidv4 through `random`."""
    return {
        **strings.table(),
        **format.table(),
        **numbers.table(),
        **collections.table(),
        **encoding.table(),
        **yamlcodec.table(),
        **dates.table(),
        **network.table(),
        **crypto.table(random),
        **filesystem.table(files, base_dir),
    }


__all__ = ["Files", "Fn", "Random", "functions"]
