"""Reference numbers from Python ``marginaleffects`` for tests/test_inference.py.

Run in a throwaway venv, never by the test suite (fme does not depend on marginaleffects)::

    python3 -m venv /tmp/me-venv
    /tmp/me-venv/bin/pip install marginaleffects "polars<2" statsmodels pandas pyarrow
    /tmp/me-venv/bin/python tests/make_marginaleffects_refs.py

Writes tests/fixtures/marginaleffects/{data.csv, refs.csv, versions.txt}. The data are simulated with a fixed
seed; the models are fitted with statsmodels' formula API exactly as the tests fit them. marginaleffects'
numeric contrasts are centred (x - h/2 to x + h/2), so the forward step x -> x + h is passed as a function.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from marginaleffects import avg_comparisons, comparisons, datagrid

OUT = Path(__file__).parent / "fixtures" / "marginaleffects"
FORMULAS = {
    "ols": "y ~ age + I(age**2) + income + C(g)",
    "logit": "yb ~ age + I(age**2) + income + age:income + C(g)",
    "poisson": "count ~ age + income + C(g)",
}


def simulate(n: int = 400, seed: int = 20240612) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 60, n).round(3)
    income = rng.normal(0, 1, n).round(4)
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    gb, gc = (g == "b").astype(float), (g == "c").astype(float)
    y = 1 + 0.03 * age - 0.0004 * age**2 + 0.5 * income + 0.3 * gb - 0.2 * gc + rng.normal(0, 1, n)
    eta = -1 + 0.04 * (age - 40) + 0.6 * income + 0.5 * gb - 0.3 * gc
    yb = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    count = rng.poisson(np.exp(0.2 + 0.01 * age + 0.3 * income + 0.4 * gb))
    return pd.DataFrame({"age": age, "income": income, "g": g, "y": y.round(6), "yb": yb, "count": count})


def fit(name: str, data: pd.DataFrame):
    if name == "ols":
        return smf.ols(FORMULAS[name], data).fit()
    if name == "logit":
        return smf.logit(FORMULAS[name], data).fit(disp=0)
    return smf.glm(FORMULAS[name], data, family=sm.families.Poisson()).fit()


def forward(h: float):
    return lambda x: np.column_stack([x.to_numpy(), x.to_numpy() + h])


def rows(frame, model: str, case: str, group_col: str | None = None) -> list[dict]:
    df = frame.to_pandas()
    out = []
    for _, r in df.iterrows():
        group = r[group_col] if group_col is not None else (r["term"] if case == "pairwise" else "")
        contrast = r["contrast"] if "contrast" in df.columns else ""
        out.append(
            {
                "model": model,
                "case": case,
                "term": r.get("term", ""),
                "contrast": contrast,
                "group": str(group),
                "estimate": r["estimate"],
                "std_error": r["std_error"],
                "statistic": r["statistic"],
                "p_value": r["p_value"],
                "conf_low": r["conf_low"],
                "conf_high": r["conf_high"],
            }
        )
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    data = simulate()
    data.to_csv(OUT / "data.csv", index=False, lineterminator="\n")
    data = pd.read_csv(OUT / "data.csv")
    data["g"] = data["g"].astype("category")
    out = []
    for name in FORMULAS:
        m = fit(name, data)
        out += rows(avg_comparisons(m, variables={"age": forward(1.0)}), name, "numeric")
        out += rows(
            avg_comparisons(m, variables={"age": forward(1.0), "income": forward(0.5)}, cross=True),
            name,
            "multivariate",
        )
        out += rows(avg_comparisons(m, variables={"g": "reference"}), name, "reference")
        out += rows(avg_comparisons(m, variables={"age": forward(1.0)}, by="g"), name, "by", group_col="g")
        out += rows(
            avg_comparisons(m, variables={"age": forward(1.0)}, by="g", hypothesis="difference ~ pairwise"),
            name,
            "pairwise",
        )
        grid = datagrid(model=m, age=[30.0, 50.0])
        out += rows(comparisons(m, variables={"age": forward(1.0)}, newdata=grid), name, "mer", group_col="age")
    pd.DataFrame(out).to_csv(OUT / "refs.csv", index=False, lineterminator="\n", float_format="%.17g")
    pkgs = ["marginaleffects", "statsmodels", "polars", "pandas", "numpy", "formulaic", "patsy"]
    (OUT / "versions.txt").write_text(
        f"python {sys.version.split()[0]}\n" + "".join(f"{p} {version(p)}\n" for p in pkgs)
    )


if __name__ == "__main__":
    main()
