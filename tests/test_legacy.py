"""Results pickled before the house moved still load, with the same numbers.

The fixtures in tests/fixtures/legacy/ were written by ``make_legacy_pickles.py`` (beside them) with the
code of commit c6f6390, whose pickles name ``fme._partition``, ``fme._ctree_stats``, ``fme.effects`` and
``fme.inference``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fme
from fme._utils.legacy import LEGACY_MODULES

HERE = Path(__file__).parent / "fixtures" / "legacy"


def _load(name: str):
    return pickle.loads((HERE / f"{name}.pkl").read_bytes())


def test_fixtures_name_the_old_private_modules():
    text = (HERE / "partition.pkl").read_bytes()
    assert b"fme._partition" in text and b"fme._ctree_stats" in text


def test_old_results_load_with_the_same_numbers():
    figures = _load("figures")
    eff, part, table = _load("fme_result"), _load("partition"), _load("ame")
    assert isinstance(eff, fme.FMEResult) and isinstance(part, fme.PartitionResult)
    assert eff.ame == figures["ame"] and eff.std_error == figures["std_error"]
    assert part.leaves["came"].tolist() == figures["leaf_came"]
    assert table["ame"].tolist() == figures["table_ame"]
    # the loaded objects work with today's code: a new partition of the old effects has the same leaves
    again = fme.came(eff, honest=False, features=["x2", "g"], minbucket=30)
    np.testing.assert_array_equal(again.leaves["came"].to_numpy(), np.asarray(figures["leaf_came"]))


def test_new_pickles_name_public_paths():
    X = pd.DataFrame({"x": np.linspace(-1, 1, 50), "z": np.linspace(0, 1, 50) ** 2})
    eff = fme.fme(lambda d: d["x"].to_numpy() ** 2 + d["z"].to_numpy(), X, {"x": 0.1})
    part = fme.came(eff, features=["x", "z"])
    blob = pickle.dumps((eff, part))
    assert b"fme.effects" in blob and b"fme.came" in blob
    assert b"fme._core" not in blob and b"fme._trees.partition" not in blob
    eff2, part2 = pickle.loads(blob)
    assert eff2.ame == eff.ame and part2.leaves.equals(part.leaves)


@pytest.mark.parametrize("old", sorted(LEGACY_MODULES))
def test_every_old_module_name_resolves(old):
    import importlib

    module = importlib.import_module(old)
    for source in LEGACY_MODULES[old]:
        new = importlib.import_module(source)
        public = [n for n in vars(new) if not n.startswith("__")]
        assert all(hasattr(module, n) for n in public)
