"""Nomad's spread expectations (its spread block's targets and even spread), through the whole
core."""

from __future__ import annotations

from collections import Counter

import pytest

from drover.model import Spread, SpreadTarget
from drover.scheduler.harness import Harness

from .conftest import make_eval, make_job, make_node

SEEDS = ["a", "b", "c"]


def placed_by(h: Harness, key: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for a in h.state.allocs.values():
        if a.terminal_status():
            continue
        node = h.state.nodes[a.node_id]
        out[node.datacenter if key == "dc" else node.meta[key]] += 1
    return out


def run(h: Harness, spreads: list[Spread], count: int, seed: str) -> None:
    job = make_job(count=count, spreads=spreads)
    h.state.upsert_job(job)
    res = h.process(make_eval(job).model_copy(update={"id": f"eval-{seed}"}))
    assert len(res.plan.placements()) == count


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("percent", [100, 90, 80, 70, 60, 50, 40, 30, 20, 10])
def test_dc1_target_percent_gets_its_share(percent: int, seed: str) -> None:
    # 10 nodes, half in dc2, count 10, target dc1 = X% -> dc1 gets X/10 allocs.
    h = Harness()
    for i in range(10):
        h.state.upsert_node(make_node(f"n{i}", dc="dc2" if i % 2 == 0 else "dc1"))
    spread = Spread(
        attribute="${node.datacenter}",
        weight=100,
        spread_target=[
            SpreadTarget(value="dc1", percent=percent),
            SpreadTarget(value="dc2", percent=100 - percent),
        ],
    )
    run(h, [spread], 10, seed)
    counts = placed_by(h, "dc")
    assert counts["dc1"] == percent // 10
    assert counts["dc2"] == 10 - percent // 10


@pytest.mark.parametrize("seed", SEEDS)
def test_even_spread_5_5(seed: str) -> None:
    h = Harness()
    for i in range(10):
        h.state.upsert_node(make_node(f"n{i}", dc="dc2" if i % 2 == 0 else "dc1"))
    run(h, [Spread(attribute="${node.datacenter}", weight=100)], 10, seed)
    assert placed_by(h, "dc") == Counter({"dc1": 5, "dc2": 5})


def twelve_nodes_three_dcs(h: Harness) -> None:
    for i in range(12):
        h.state.upsert_node(make_node(f"n{i:02d}", dc=f"dc{i % 3 + 1}"))


@pytest.mark.parametrize("seed", SEEDS)
def test_one_target_50_percent_rest_implicit(seed: str) -> None:
    h = Harness()
    twelve_nodes_three_dcs(h)
    spread = Spread(
        attribute="${node.datacenter}", weight=100, spread_target=[SpreadTarget(value="dc1", percent=50)]
    )
    run(h, [spread], 12, seed)
    counts = placed_by(h, "dc")
    assert counts["dc1"] == 6
    # The remainder is shared by every value without a target.
    assert counts["dc2"] + counts["dc3"] == 6


@pytest.mark.parametrize("seed", SEEDS)
def test_targets_50_25_25(seed: str) -> None:
    h = Harness()
    twelve_nodes_three_dcs(h)
    spread = Spread(
        attribute="${node.datacenter}",
        weight=100,
        spread_target=[
            SpreadTarget(value="dc1", percent=50),
            SpreadTarget(value="dc2", percent=25),
            SpreadTarget(value="dc3", percent=25),
        ],
    )
    run(h, [spread], 12, seed)
    assert placed_by(h, "dc") == Counter({"dc1": 6, "dc2": 3, "dc3": 3})


@pytest.mark.parametrize("seed", SEEDS)
def test_two_spreads_dc_even_rack_70_30(seed: str) -> None:
    h = Harness()
    for i in range(10):
        h.state.upsert_node(
            make_node(f"n{i}", dc=("dc1", "dc2")[i % 2], meta={"rack": ("r1", "r2")[(i // 2) % 2]})
        )
    spreads = [
        Spread(attribute="${node.datacenter}", weight=50),
        Spread(
            attribute="${meta.rack}",
            weight=50,
            spread_target=[SpreadTarget(value="r1", percent=70), SpreadTarget(value="r2", percent=30)],
        ),
    ]
    run(h, spreads, 10, seed)
    assert placed_by(h, "dc") == Counter({"dc1": 5, "dc2": 5})
    assert placed_by(h, "rack") == Counter({"r1": 7, "r2": 3})


@pytest.mark.parametrize("seed", SEEDS)
def test_value_without_target_and_no_remainder_is_avoided(seed: str) -> None:
    # Targets sum to 100: a node in dc3 has no desired share and scores -1.
    h = Harness()
    twelve_nodes_three_dcs(h)
    spread = Spread(
        attribute="${node.datacenter}",
        weight=100,
        spread_target=[SpreadTarget(value="dc1", percent=50), SpreadTarget(value="dc2", percent=50)],
    )
    run(h, [spread], 8, seed)
    assert placed_by(h, "dc")["dc3"] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_job_level_spread_applies_to_group(seed: str) -> None:
    h = Harness()
    for i in range(10):
        h.state.upsert_node(make_node(f"n{i}", dc="dc2" if i % 2 == 0 else "dc1"))
    job = make_job(count=10)
    job.spreads = [Spread(attribute="${node.datacenter}", weight=100)]
    h.state.upsert_job(job)
    h.process(make_eval(job).model_copy(update={"id": f"eval-{seed}"}))
    assert placed_by(h, "dc") == Counter({"dc1": 5, "dc2": 5})


@pytest.mark.parametrize("seed", SEEDS)
def test_spread_counts_existing_allocs(seed: str) -> None:
    # Scale 4 -> 10 with even spread: the final layout is still 5/5.
    h = Harness()
    for i in range(10):
        h.state.upsert_node(make_node(f"n{i}", dc="dc2" if i % 2 == 0 else "dc1"))
    run(h, [Spread(attribute="${node.datacenter}", weight=100)], 4, seed)
    job = make_job(count=10, spreads=[Spread(attribute="${node.datacenter}", weight=100)])
    h.state.upsert_job(job)
    h.process(make_eval(job).model_copy(update={"id": f"eval2-{seed}"}))
    assert placed_by(h, "dc") == Counter({"dc1": 5, "dc2": 5})
