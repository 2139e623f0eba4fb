"""Property test: random DataFrames of mixed dtypes either work or raise an
:class:`fme.FMEError`, never another exception, and are never modified.

Columns are drawn from nullable Int64/Float64/boolean/string with <NA>, categoricals with
unused levels, datetimes, objects mixing numbers and text, bools, complex numbers, floats
with NaN/inf; the steps from numbers, rules, levels and nonsense.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fme

KINDS = (
    "float",
    "float_nan_inf",
    "int",
    "Int64",
    "Float64",
    "boolean",
    "string",
    "category",
    "datetime",
    "object_mixed",
    "bool",
    "complex",
)


def make_column(kind: str, n: int, rng: np.random.Generator) -> pd.Series:
    na = rng.uniform(size=n) < 0.25
    if kind == "float":
        return pd.Series(rng.normal(size=n))
    if kind == "float_nan_inf":
        v = rng.normal(size=n)
        v[na] = rng.choice([np.nan, np.inf, -np.inf], size=int(na.sum()))
        return pd.Series(v)
    if kind == "int":
        return pd.Series(rng.integers(0, 5, n))
    if kind == "Int64":
        return pd.Series(pd.array([None if m else int(v) for m, v in zip(na, rng.integers(0, 5, n))], dtype="Int64"))
    if kind == "Float64":
        return pd.Series(pd.array([None if m else float(v) for m, v in zip(na, rng.normal(size=n))], dtype="Float64"))
    if kind == "boolean":
        return pd.Series(pd.array([None if m else bool(v) for m, v in zip(na, rng.integers(0, 2, n))], dtype="boolean"))
    if kind == "string":
        return pd.Series(
            pd.array([None if m else str(v) for m, v in zip(na, rng.choice(list("xyz"), n))], dtype="string")
        )
    if kind == "category":
        return pd.Series(pd.Categorical(rng.choice(["a", "b"], n), categories=["a", "b", "unused"]))
    if kind == "datetime":
        return pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 100, n), unit="D"))
    if kind == "object_mixed":
        return pd.Series([1, 2.5, "n/a", None, 3][:n] + [7] * max(0, n - 5), dtype=object)
    if kind == "bool":
        return pd.Series(rng.integers(0, 2, n).astype(bool))
    return pd.Series(rng.normal(size=n) + 1j * rng.normal(size=n))


def model(d: pd.DataFrame) -> np.ndarray:
    """Uses every real numeric column it can read; other columns are ignored."""
    out = np.zeros(len(d))
    for c in d.columns:
        col = d[c]
        if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_complex_dtype(col.dtype):
            v = col.to_numpy(dtype=float, na_value=0.0)
            out += np.sin(np.where(np.isfinite(v), v, 0.0))
    return out


STEPS = st.one_of(
    st.floats(-3, 3).filter(lambda v: v != 0),
    st.sampled_from(["sd", "-0.5*iqr", "a", "x", "n/a", "unused"]),
    st.sampled_from([True, False, 1, 0, 2.5, None]),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=5),
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    which=st.integers(0, 4),
    step=STEPS,
    call=st.sampled_from(
        ["fme", "fme_nlm", "fme_envelope", "fme_hull_shrink", "ame", "mem", "dme", "came", "max_linear_step"]
    ),
)
def test_random_frames_work_or_raise_fme_errors_and_are_not_modified(kinds, n, seed, which, step, call):
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({f"c{j}_{k}": make_column(k, n, rng) for j, k in enumerate(kinds)})
    before = data.copy(deep=True)
    feature = data.columns[which % data.shape[1]]
    steps = {feature: step}
    try:
        if call == "fme":
            fme.fme(model, data, steps)
        elif call == "fme_nlm":
            fme.fme(model, data, steps, nlm=True, nlm_points=4)
        elif call == "fme_envelope":
            fme.fme(model, data, steps, extrapolation="envelope").summary()
        elif call == "fme_hull_shrink":
            fme.fme(model, data, steps, extrapolation="hull", on_extrapolation="shrink").summary()
        elif call == "ame":
            fme.ame(model, data)
        elif call == "mem":
            fme.mem(model, data, steps)
        elif call == "dme":
            fme.dme(model, data, feature)
        elif call == "came":
            fme.came(fme.fme(model, data, steps)).summary()
        else:
            fme.max_linear_step(model, data, feature, step, nlm_points=4)
    except fme.FMEError:
        pass
    pd.testing.assert_frame_equal(data, before)


@pytest.mark.parametrize("method", ["ctree", "cart"])
def test_came_refuses_a_complex_covariate_on_both_tree_paths(method):
    rng = np.random.default_rng(1)
    X = pd.DataFrame(
        {"a": rng.normal(size=60), "b": rng.normal(size=60), "z": rng.normal(size=60) + 1j * rng.normal(size=60)}
    )
    before = X.copy()
    eff = fme.fme(lambda d: 2.0 * d["a"].to_numpy() + d["b"].to_numpy() ** 2, X, {"a": 1.0})
    with pytest.raises(fme.DataError, match=r"column\(s\) \['z'\] of `X` are complex-valued.*z.real and z.imag"):
        fme.came(eff, features=["b", "z"], method=method)
    pd.testing.assert_frame_equal(X, before)
    assert fme.came(eff, honest=False, features=["b"], method=method).leaves["n"].sum() == 60
