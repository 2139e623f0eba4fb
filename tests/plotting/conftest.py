"""Fixtures shared by the plotting tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def pyplot():
    """pyplot on the Agg backend, figures closed before and after (as sklearn's fixture)."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    yield plt
    plt.close("all")
