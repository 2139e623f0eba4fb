"""Extrapolation detectors (paper Appendix "Model Extrapolation") and fme(..., on_extrapolation=...)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression

import fme as fme_pkg
from fme.effects import fme
from fme.exceptions import ExtrapolationError, NotFittedError, ParameterError, StepError
from fme.extrapolation import (
    DETECTORS,
    CERTDetector,
    ConvexHullDetector,
    EnvelopeDetector,
    IsolationForestDetector,
    LOFDetector,
    MCECDetector,
    make_detector,
)


@pytest.fixture(scope="module")
def band() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    x1 = rng.uniform(-3, 3, 2000)
    return pd.DataFrame({"x1": x1, "x2": x1 + rng.normal(0, 0.05, 2000)})


@pytest.fixture(scope="module")
def ring() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    r = rng.uniform(2, 3, 3000)
    th = rng.uniform(0, 2 * np.pi, 3000)
    return pd.DataFrame({"x1": r * np.cos(th), "x2": r * np.sin(th)})


@pytest.fixture(scope="module")
def gauss() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(rng.standard_normal((1500, 3)), columns=["a", "b", "c"])


#: True R(x) = U / (U + P) on the ring: U = 1/36 (box [-3, 3]^2), P = 1/(5 pi) (annulus area).
RING_R = (1 / 36) / (1 / 36 + 1 / (5 * np.pi))


def _on_ring(n: int = 100) -> pd.DataFrame:
    th = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return pd.DataFrame({"x1": 2.5 * np.cos(th), "x2": 2.5 * np.sin(th)})


OFF_BAND = pd.DataFrame({"x1": [2.0, -2.0], "x2": [-2.0, 2.0]})  # inside the box, far off the diagonal
ON_BAND = pd.DataFrame({"x1": [0.0, 1.0, -1.5], "x2": [0.0, 1.0, -1.5]})
FAR = pd.DataFrame({"x1": [10.0, -8.0], "x2": [10.0, 0.0]})


# ----------------------------------------------------------------- registry and validation
def test_registry_names():
    assert set(DETECTORS) == {"envelope", "hull", "mcec", "cert", "isolation_forest", "lof"}
    assert isinstance(make_detector("hull", 0), ConvexHullDetector)
    assert make_detector("MCEC", 0).random_state == 0


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ExtrapolationError, match="valid names: cert, envelope, hull, isolation_forest, lof, mcec"):
        make_detector("convex")


def test_object_without_flag_rejected(band):
    class NoFlag:
        def fit(self, ref):
            return self

    with pytest.raises(ExtrapolationError, match="neither a detector name"):
        fme(lambda d: d["x1"], band.head(5), {"x1": 0.1}, extrapolation=NoFlag(), reference_data=band)


@pytest.mark.parametrize("cls", [ConvexHullDetector, MCECDetector, CERTDetector, IsolationForestDetector, LOFDetector])
def test_not_fitted(cls, band):
    with pytest.raises(NotFittedError, match="not fitted"):
        cls().flag(band)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: MCECDetector(threshold=1.0), "threshold must be a number in \\(0, 1\\)"),
        (lambda: MCECDetector(threshold=0), "threshold must be a number in \\(0, 1\\)"),
        (lambda: CERTDetector(threshold=-0.2), "threshold must be"),
        (lambda: IsolationForestDetector(contamination=0.7), "contamination must be a number in \\(0, 0.5\\]"),
        (lambda: LOFDetector(contamination=0.0), "contamination must be"),
        (lambda: ConvexHullDetector(tol=-1.0), "tol must be"),
        (lambda: MCECDetector(classifier=object()), "predict_proba"),
    ],
)
def test_parameter_ranges(make, match):
    with pytest.raises(ParameterError, match=match):
        make()


@pytest.mark.parametrize("name", ["hull", "mcec", "cert", "isolation_forest", "lof"])
def test_reference_with_missing_values(name, band):
    bad = band.head(50).copy()
    bad.iloc[3, 1] = np.nan
    with pytest.raises(ExtrapolationError, match="missing values in \\['x2'\\]"):
        make_detector(name, 0).fit(bad)


def test_reference_data_missing_model_feature(band):
    model = LinearRegression().fit(band, band["x1"] * 2)
    with pytest.raises(ExtrapolationError, match="reference_data lacks the model feature\\(s\\) \\['x2'\\]"):
        fme(model, band.head(10), {"x1": 0.1}, extrapolation="hull", reference_data=band[["x1"]])


def test_point_with_missing_value_flagged(band):
    det = ConvexHullDetector().fit(band)
    pts = pd.DataFrame({"x1": [0.0, np.nan], "x2": [0.0, 0.0]})
    flags = det.flag(pts)
    assert flags.tolist() == [False, True]
    assert det.explain(pts, flags).tolist() == ["", "missing value in x1"]


# ----------------------------------------------------------------- convex hull
def test_hull_band_inside_box_outside_hull(band):
    env = EnvelopeDetector().fit(band)
    hull = ConvexHullDetector().fit(band)
    assert env.flag(OFF_BAND).tolist() == [False, False]
    assert hull.flag(OFF_BAND).tolist() == [True, True]
    assert hull.flag(ON_BAND).tolist() == [False, False, False]
    assert hull.flag(FAR).tolist() == [True, True]
    assert not hull.flag(band).any()  # reference rows lie in their own hull
    reasons = hull.explain(pd.concat([OFF_BAND, FAR]), np.array([True, True, True, True]))
    assert reasons[0] == "outside convex hull of reference data (inside its range)"
    assert reasons[2] == "outside convex hull of reference data (outside its range)"


def test_hull_matches_qhull_and_lp_paths(gauss):
    """The Qhull facet path and the LP path (forced by qhull_max_dim=1) agree, and with a naive LP."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(5)
    pts = pd.DataFrame(1.6 * rng.standard_normal((150, 3)), columns=["a", "b", "c"])
    q = ConvexHullDetector().fit(gauss)
    lp = ConvexHullDetector(qhull_max_dim=1, random_state=0).fit(gauss)
    assert q.mode_ == "qhull" and lp.mode_ == "lp"
    fq, fl = q.flag(pts), lp.flag(pts)
    Z, zp = q.encoding_.z_reference, q.encoding_.standardise(pts)
    A = np.vstack([Z.T, np.ones(len(Z))])
    naive = np.array(
        [
            linprog(np.zeros(len(Z)), A_eq=A, b_eq=np.r_[p, 1.0], bounds=(0, None), method="highs").status != 0
            for p in zp[:40]
        ]
    )
    assert 0.2 < fq.mean() < 0.9  # a real mix of inside and outside points
    np.testing.assert_array_equal(fq, fl)
    np.testing.assert_array_equal(fq[:40], naive)


def test_hull_high_dimension_matches_naive_lp():
    """d = 8 (no Qhull): the batched Frank-Wolfe / refinement certificates and the LPs give, point
    by point, the answer of the naive method (one feasibility LP on all reference rows)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(11)
    d = 8
    cols = [f"x{j}" for j in range(d)]
    ref = pd.DataFrame(rng.standard_normal((2000, d)), columns=cols)
    det = ConvexHullDetector(random_state=0).fit(ref)
    Z = det.encoding_.z_reference
    c = Z.mean(axis=0)
    # Mixtures of the d rows most extreme along a random direction: on or near a face of the hull,
    # pushed slightly out of it or pulled slightly into it (the hard cases).
    near = []
    for eps in (-1e-2, -1e-3, 1e-3, 1e-2, 5e-2):
        for _ in range(25):
            u = rng.standard_normal(d)
            top = Z[np.argsort(-(Z @ u))[:d]]
            f = rng.dirichlet(np.ones(d)) @ top
            near.append(f + eps * (f - c))
    zp = np.vstack(
        [
            rng.standard_normal((60, d)),  # mostly inside
            1.3 * rng.standard_normal((60, d)),  # many just outside
            4.0 * rng.standard_normal((20, d)),  # far outside
            rng.dirichlet(np.ones(20), 20) @ Z[rng.choice(len(Z), 20)],  # inside by construction
            np.array(near),
        ]
    )
    pts = pd.DataFrame(zp * det.encoding_.sd + det.encoding_.mean, columns=cols)
    flags = det.flag(pts)
    A = np.vstack([Z.T, np.ones(len(Z))])
    naive = np.array(
        [
            linprog(np.zeros(len(Z)), A_eq=A, b_eq=np.r_[p, 1.0], bounds=(0, None), method="highs").status != 0
            for p in det.encoding_.standardise(pts)
        ]
    )
    assert 0.3 < naive.mean() < 0.7
    assert det.n_stage_["frank-wolfe"] + det.n_stage_["refinement"] > 50  # the new stages did decide
    np.testing.assert_array_equal(flags, naive)
    np.testing.assert_array_equal(det.score(pts) > 0, naive)


def test_hull_lp_fallback_agrees(gauss, monkeypatch):
    """With Frank-Wolfe and the refinement switched off, the undecided points go to the LPs: same flags."""
    import fme.extrapolation._hull as hull_module

    rng = np.random.default_rng(6)
    pts = pd.DataFrame(1.3 * rng.standard_normal((120, 3)), columns=["a", "b", "c"])
    fast = ConvexHullDetector(qhull_max_dim=1, random_state=0).fit(gauss).flag(pts)
    monkeypatch.setattr(hull_module, "_FW_ITER", 0)
    monkeypatch.setattr(hull_module, "_REFINE_ROUNDS", 0)
    det = ConvexHullDetector(qhull_max_dim=1, random_state=0).fit(gauss)
    np.testing.assert_array_equal(det.flag(pts), fast)
    assert det.n_lp_ > 0 and det.n_stage_["refinement"] == 0


def test_hull_one_dimension_is_interval():
    ref = pd.DataFrame({"x": [0.0, 1.0, 5.0]})
    det = ConvexHullDetector().fit(ref)
    assert det.flag(pd.DataFrame({"x": [-0.1, 0.0, 2.5, 5.0, 5.2]})).tolist() == [True, False, False, False, True]
    np.testing.assert_allclose(det.score(pd.DataFrame({"x": [2.0, 7.0]})), [0.0, 2.0 / ref["x"].std(ddof=0)])


def test_hull_flat_reference_uses_lp():
    """x2 = 2 x1 exactly: Qhull fails on the flat hull, the LP path decides."""
    x1 = np.linspace(0, 1, 50)
    det = ConvexHullDetector().fit(pd.DataFrame({"x1": x1, "x2": 2 * x1}))
    assert det.mode_ == "lp"
    pts = pd.DataFrame({"x1": [0.5, 0.5, 1.2], "x2": [1.0, 0.9, 2.4]})
    assert det.flag(pts).tolist() == [False, True, True]


def test_hull_categorical_unseen_level(band):
    ref = band.assign(g=np.where(band["x1"] > 0, "a", "b"))
    det = ConvexHullDetector().fit(ref)
    pts = pd.DataFrame({"x1": [0.0, 0.0], "x2": [0.0, 0.0], "g": ["a", "z"]})
    flags = det.flag(pts)
    assert flags.tolist() == [False, True]
    assert det.explain(pts, flags)[1] == "g level not in reference data"


# ----------------------------------------------------------------- ring: hull vs MCEC/CERT
def test_ring_hull_inside_mcec_outside(ring):
    centre = pd.DataFrame({"x1": [0.0, 0.4], "x2": [0.0, -0.3]})
    assert ConvexHullDetector().fit(ring).flag(centre).tolist() == [False, False]
    assert EnvelopeDetector().fit(ring).flag(centre).tolist() == [False, False]
    mcec = MCECDetector(random_state=0).fit(ring)
    assert mcec.flag(centre).tolist() == [True, True]
    assert (mcec.score(centre) > 0.9).all()
    # on the ring the estimated R is near its true value ~0.30; the forest's noise flags few points
    assert abs(mcec.score(_on_ring()).mean() - RING_R) < 0.06
    assert mcec.flag(_on_ring()).mean() <= 0.15
    assert mcec.explain(centre, np.array([True, True]))[0].startswith("MCEC R(x)=")
    r = mcec.score(FAR)
    assert r.tolist() == [1.0, 1.0]  # outside the box: R = 1 (paper)


def test_ring_cert(ring):
    centre = pd.DataFrame({"x1": [0.0, 0.4], "x2": [0.0, -0.3]})
    cert = CERTDetector().fit(ring)
    assert cert.flag(centre).tolist() == [True, True]
    assert (cert.score(centre) > 0.9).all()
    assert abs(cert.score(_on_ring()).mean() - RING_R) < 0.06
    assert cert.flag(_on_ring()).mean() <= 0.15
    assert cert.flag(FAR).tolist() == [True, True]
    assert cert.explain(centre, np.array([True, False]))[0].startswith("CERT leaf R(x)=")


def test_cert_band(band):
    cert = CERTDetector().fit(band)
    assert cert.flag(OFF_BAND).tolist() == [True, True]
    assert cert.flag(ON_BAND).tolist() == [False, False, False]


def test_mcec_band_and_determinism(band):
    a = MCECDetector(random_state=3).fit(band)
    b = MCECDetector(random_state=3).fit(band)
    assert a.flag(OFF_BAND).tolist() == [True, True]
    assert a.flag(ON_BAND).tolist() == [False, False, False]
    np.testing.assert_array_equal(a.score(ON_BAND), b.score(ON_BAND))


def test_mcec_categorical_one_hot(band):
    ref = band.assign(g=np.where(band["x1"] > 0, "a", "b"))
    det = MCECDetector(random_state=0).fit(ref)
    pts = pd.DataFrame({"x1": [1.0, 1.0, 1.0], "x2": [1.0, 1.0, 1.0], "g": ["a", "b", "q"]})
    # level "b" never occurs with x1 > 0 in the data, while the background mixes levels freely.
    assert det.flag(pts).tolist() == [False, True, True]


# ----------------------------------------------------------------- outlier detectors
@pytest.mark.parametrize("cls", [IsolationForestDetector, LOFDetector])
def test_outlier_detectors_flag_far_points(cls, gauss):
    det = cls(random_state=0).fit(gauss)
    far = pd.DataFrame({"a": [8.0, -7.0], "b": [8.0, 0.0], "c": [0.0, 7.0]})
    centre = pd.DataFrame({"a": [0.0, 0.2], "b": [0.0, -0.1], "c": [0.0, 0.1]})
    assert det.flag(far).tolist() == [True, True]
    assert det.flag(centre).tolist() == [False, False]
    # contamination = 1%: about 1% of the reference rows are flagged
    assert 0.003 <= det.flag(gauss).mean() <= 0.02
    assert (det.score(far) > 0).all()
    assert "decision_function=" in det.explain(far, np.array([True, True]))[0]


# ----------------------------------------------------------------- fme end to end
def test_fme_hull_end_to_end(band):
    model = LinearRegression().fit(band, band["x1"] + 2 * band["x2"])
    data = pd.concat([ON_BAND, OFF_BAND], ignore_index=True)
    res = fme(model, data, {"x1": 0.1, "x2": 0.1}, extrapolation="hull", reference_data=band)
    assert res.results.index.tolist() == [0, 1, 2]
    np.testing.assert_allclose(res.results["fme"], 0.3, atol=1e-9)
    ex = res.extrapolated
    assert ex.index.tolist() == [3, 4]
    assert ex["point"].tolist() == ["x and x+h", "x and x+h"]
    assert ex["reason"].iloc[0].startswith("outside convex hull of reference data")
    assert res.detector == "hull"


def _paper_forest():
    rng = np.random.default_rng(0)
    x = rng.uniform(-5, 5, 600)
    data = pd.DataFrame({"x": x})
    forest = RandomForestRegressor(n_estimators=30, random_state=0).fit(data, x**2 + rng.normal(0, 1, x.size))
    return data, forest


def test_paper_example_envelope_flags_exactly_x_above_4():
    data, forest = _paper_forest()
    res = fme(forest, data, {"x": 1}, extrapolation="envelope")
    expected = data.index[data["x"] + 1 > data["x"].max()]
    assert 0 < len(expected)
    assert sorted(res.extrapolated.index) == sorted(expected)
    assert (data.loc[res.extrapolated.index, "x"] > 3.98).all()
    assert (res.extrapolated["point"] == "x+h").all()
    assert res.n == len(data) - len(expected)


def test_shrink_univariate_paper_example():
    data, forest = _paper_forest()
    xmax = data["x"].max()
    res = fme(forest, data, {"x": 1}, extrapolation="envelope", on_extrapolation="shrink")
    step = res.results["step_x"]
    # only the row at the maximum cannot move at all (step 0): it is excluded with that reason
    top = data["x"].idxmax()
    assert res.extrapolated.index.tolist() == [top]
    assert res.extrapolated.loc[top, "reason"] == "no step of at least 0.01 h stays inside"
    assert res.n == len(data) - 1
    full, data = data, data.drop(index=top)
    near = data["x"] + 1 > xmax
    assert (step <= 1.0).all() and (step >= 0).all()
    assert (step[~near] == 1.0).all()
    # shrunk exactly to the envelope's edge (bisection, 40 halvings), from the inside
    np.testing.assert_allclose(step[near], xmax - data.loc[near, "x"], atol=1e-9)
    assert (data["x"] + step.loc[data.index] <= xmax).all()
    moved = pd.DataFrame({"x": data["x"] + step.loc[data.index]})
    assert not EnvelopeDetector().fit(full).flag(moved).any()
    np.testing.assert_allclose(res.results["fme"].loc[data.index], forest.predict(moved) - forest.predict(data))


def test_shrink_multivariate_per_feature(band):
    model = LinearRegression().fit(band, band["x1"] - band["x2"])
    box = EnvelopeDetector().fit(band)
    data = pd.DataFrame({"x1": [0.0, 2.95, 2.9, 3.5], "x2": [0.0, 0.0, 2.95, 0.0]})
    res = fme(
        model, data, {"x1": 0.2, "x2": -0.5}, extrapolation="envelope", reference_data=band, on_extrapolation="shrink"
    )
    r = res.results
    assert r.index.tolist() == [0, 1, 2]
    # row 0: both steps fit; row 1: only x1 is shrunk; row 2: x1 shrunk, x2 keeps its full step
    assert r.loc[0, "step_x1"] == 0.2 and r.loc[0, "step_x2"] == -0.5
    np.testing.assert_allclose(r.loc[1, "step_x1"], box.max_[0] - 2.95, atol=1e-9)
    assert r.loc[1, "step_x2"] == -0.5
    np.testing.assert_allclose(r.loc[2, "step_x1"], box.max_[0] - 2.9, atol=1e-9)
    assert r.loc[2, "step_x2"] == -0.5
    assert (r["step_x1"].abs() <= 0.2).all() and (r["step_x2"].abs() <= 0.5).all()
    moved = data.loc[r.index].assign(x1=lambda d: d["x1"] + r["step_x1"], x2=lambda d: d["x2"] + r["step_x2"])
    assert not box.flag(moved).any()
    ex = res.extrapolated
    assert ex.index.tolist() == [3]
    assert ex.loc[3, "point"] == "x" and ex.loc[3, "reason"].startswith("x1 > max")


def test_shrink_with_hull_stays_inside(band):
    model = LinearRegression().fit(band, band["x1"])
    data = pd.DataFrame({"x1": [0.0, 1.0], "x2": [0.0, 1.0]})
    res = fme(model, data, {"x1": 1.0}, extrapolation="hull", reference_data=band, on_extrapolation="shrink")
    step = res.results["step_x1"].to_numpy()
    assert (step > 0).all() and (step < 0.5).all()  # leaving the narrow band needs only a short step
    moved = data.assign(x1=data["x1"] + step)
    assert not ConvexHullDetector().fit(band).flag(moved).any()
    # a little longer is outside: the step is the largest inside, to bisection accuracy
    assert ConvexHullDetector().fit(band).flag(data.assign(x1=data["x1"] + step + 1e-6)).all()


def test_shrink_categorical_step_rejected():
    data = pd.DataFrame({"x": [0.0, 1.0, 2.0], "g": pd.Categorical(["a", "b", "a"])})
    with pytest.raises(StepError, match="not defined for categorical steps"):
        fme(lambda d: d["x"], data, {"g": "b"}, extrapolation="envelope", on_extrapolation="shrink")


def test_detector_object_not_fitted_by_user_is_fitted_by_fme_but_raw_use_raises(band):
    det = MCECDetector(random_state=0)
    with pytest.raises(NotFittedError, match="call fit\\(reference_data\\) first"):
        det.score(band)
    res = fme(lambda d: d["x1"] + d["x2"], band.head(20), {"x1": 0.01}, extrapolation=det, reference_data=band)
    assert res.n + len(res.extrapolated) == 20
    assert hasattr(det, "classifier_")


def test_package_exports_detectors():
    assert fme_pkg.EnvelopeDetector is EnvelopeDetector


def test_extrapolation_package_public_names_and_registry_order():
    """fme.extrapolation (a subpackage) exports the names the former module did, as the same
    objects as fme's, and registers the detectors in the former order."""
    import fme.extrapolation as ext

    assert ext.__all__ == [
        "ExtrapolationDetector",
        "EnvelopeDetector",
        "ConvexHullDetector",
        "MCECDetector",
        "CERTDetector",
        "IsolationForestDetector",
        "LOFDetector",
        "DETECTORS",
        "make_detector",
        "DETECTOR_NAMES",
    ]
    for name in ext.__all__:
        if name not in ("make_detector", "DETECTOR_NAMES"):
            assert getattr(fme_pkg, name) is getattr(ext, name)
    assert list(DETECTORS) == ["envelope", "hull", "mcec", "cert", "isolation_forest", "lof"]
    assert DETECTORS == {
        cls.name: cls
        for cls in (
            EnvelopeDetector,
            ConvexHullDetector,
            MCECDetector,
            CERTDetector,
            IsolationForestDetector,
            LOFDetector,
        )
    }


def test_registering_a_second_detector_under_a_taken_name_is_refused():
    from fme.extrapolation._base import register_detector

    class Clash(EnvelopeDetector):
        pass

    with pytest.raises(ExtrapolationError, match="two detectors are named 'envelope': EnvelopeDetector and Clash"):
        register_detector(Clash)
    assert DETECTORS["envelope"] is EnvelopeDetector


# ------------------------------------------------------------------ shrink in many dimensions
def test_steps_shrinking_below_the_minimum_share_are_excluded_and_summarised():
    data = pd.DataFrame({"x": np.arange(0.0, 10.5, 0.5)})
    # x + s * 4 <= 10 needs s <= (10 - x) / 4: x = 9.99... rows shrink below 1 % of h only at the top
    res = fme(lambda d: d["x"].to_numpy() ** 2, data, {"x": 4.0}, extrapolation="envelope", on_extrapolation="shrink")
    share = res.results["step_x"] / 4.0
    np.testing.assert_allclose(share, np.minimum(1.0, (10.0 - data["x"].iloc[:-1]) / 4.0), atol=1e-9)
    assert res.extrapolated.index.tolist() == [20]  # x = 10: step 0 < 0.01 h
    assert res.extrapolated["reason"].tolist() == ["no step of at least 0.01 h stays inside"]
    text = res.summary()
    assert "effective step of x (share of h): min 0.125  q25 0.719  median 1  q75 1  max 1; shrunk rows 7" in text


def test_degenerate_hull_warns_and_excludes_quickly():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = LinearRegression().fit(X, y)
    with pytest.warns(
        UserWarning,
        match=r"convex hull of the reference data is degenerate: about 100% of its 442 "
        r"rows lie on the boundary in 10 dimensions",
    ):
        with pytest.raises(ExtrapolationError, match="all 442 rows are extrapolation points"):
            fme(model, X, {"bmi": "0.5*sd", "bp": "0.5*sd"}, extrapolation="hull", on_extrapolation="shrink")


def test_envelope_ignores_infinite_reference_values():
    # An inf in the reference data must not make the envelope unbounded (nothing would be flagged).
    ref = pd.DataFrame({"a": [0.0, 1.0, 2.0, np.inf, -np.inf, np.nan]})
    det = fme_pkg.extrapolation.make_detector("envelope").fit(ref)
    assert (det.min_[0], det.max_[0]) == (0.0, 2.0)
    np.testing.assert_array_equal(det.flag(pd.DataFrame({"a": [2.0, 2.5, -0.1]})), [False, True, True])


def test_detector_names_known_without_importing_the_detectors_equal_the_registry():
    import subprocess
    import sys

    from fme.extrapolation import DETECTOR_NAMES, DETECTORS

    assert DETECTOR_NAMES == tuple(DETECTORS)
    code = (
        "import sys; from fme.extrapolation import DETECTOR_NAMES; "
        "print(any(m in sys.modules for m in ('pandas', 'scipy', 'sklearn')))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_a_hull_nnls_that_does_not_converge_leaves_the_point_to_the_linear_program(monkeypatch):
    """The NNLS refinement is a fast path: when scipy's NNLS stops at its iteration cap (it did on the diabetes
    data under one BLAS build), the point goes to the exact linear program, and every flag is the same."""
    import fme.extrapolation._hull as hull

    rng = np.random.default_rng(1)
    # 8 dimensions: above the exact Qhull range, so points reach the NNLS refinement
    ref = pd.DataFrame(rng.normal(size=(300, 8)), columns=list("abcdefgh"))
    points = pd.DataFrame(rng.normal(size=(300, 8)), columns=list("abcdefgh"))
    with pytest.warns(UserWarning, match="degenerate"):
        plain = fme_pkg.extrapolation.make_detector("hull").fit(ref)
    expected = plain.flag(points)
    assert plain.n_stage_["refinement"] > 0
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("Maximum number of iterations reached.")

    monkeypatch.setattr(hull, "nnls", failing)
    with pytest.warns(UserWarning, match="degenerate"):
        det = fme_pkg.extrapolation.make_detector("hull").fit(ref)
    got = det.flag(points)
    assert calls and det.n_stage_["refinement"] == 0 and det.n_stage_["linear program"] > 0
    np.testing.assert_array_equal(got, expected)
    assert 0 < expected.sum() < len(points)


@pytest.mark.parametrize("name", sorted(fme_pkg.extrapolation.DETECTOR_NAMES))
def test_every_detector_flags_the_same_rows_call_after_call_without_a_seed(name):
    """No random_state: a randomised detector (a forest, a background sample, sampled rows) takes fme's default
    seed, so the same call excludes the same rows, and warns alike, every time."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=list("abc"))

    def model(d: pd.DataFrame) -> np.ndarray:
        return d["a"].to_numpy() + d["b"].to_numpy()

    def run() -> tuple[list, list[str]]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            res = fme(model, X, {"a": 1.5}, extrapolation=name, inference="sample")
        return list(res.excluded.index), sorted(str(w.message) for w in seen)

    first = run()
    assert run() == first and run() == first
