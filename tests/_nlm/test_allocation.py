"""A round's picks of the error-controlled NLM (fme._nlm.allocation): the greedy pick by priority within the cap."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fme._nlm.allocation import greedy_prefix


def _stable_prefix(prio, cost, cap, top):
    """The greedy pick as a stable sort gives it (the reference of fme._nlm.allocation.greedy_prefix)."""
    order = top[np.argsort(-prio[top], kind="stable")]
    return order[np.cumsum(cost[order]) <= cap]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, np.inf, -np.inf, np.nan, 3.25]), st.sampled_from([1.0, 43.0])
        ),
        min_size=1,
        max_size=60,
    ),
    st.floats(-5.0, 2000.0),
    st.randoms(use_true_random=False),
)
def test_the_greedy_pick_is_the_stable_sorts_prefix(items, cap, rnd):
    """Ties of every kind (equal priorities, signed zeros, infinities, NaN) and both costs: the same candidates
    as the stable sort's prefix, for any order of the candidates in ``top``."""
    prio = np.array([p for p, _ in items])
    cost = np.array([c for _, c in items])
    top = np.arange(prio.size)
    rnd.shuffle(top)
    got = np.sort(greedy_prefix(prio, cost, cap, top))
    np.testing.assert_array_equal(got, np.sort(_stable_prefix(prio, cost, cap, top)))
