"""Reference numbers from Python ``marginaleffects`` for tests/test_margins_vocabulary.py.

Run in a throwaway venv, never by the test suite (fme does not depend on marginaleffects)::

    python3 -m venv /tmp/me-venv
    /tmp/me-venv/bin/pip install marginaleffects "polars<2" statsmodels pandas pyarrow
    /tmp/me-venv/bin/python tests/make_marginaleffects_vocab_refs.py

Reads the data of tests/fixtures/marginaleffects/data.csv (written by make_marginaleffects_refs.py) and writes
tests/fixtures/marginaleffects/vocab.csv: avg_slopes of every slope type, avg_comparisons on the ratio, lnratio,
lnor and lift scales and their ...avg forms (forward steps passed as functions, as in the other script),
avg_predictions overall and by group, and an equivalence test, for the logit and Poisson models.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from make_marginaleffects_refs import fit, forward  # noqa: E402
from marginaleffects import avg_comparisons, avg_predictions, avg_slopes  # noqa: E402

OUT = Path(__file__).parent / "fixtures" / "marginaleffects"


def rows(frame, model: str, case: str, group_col: str | None = None) -> list[dict]:
    df = frame.to_pandas()
    out = []
    for _, r in df.iterrows():
        row = {
            "model": model,
            "case": case,
            "group": "" if group_col is None else str(r[group_col]),
            "estimate": r["estimate"],
            "std_error": r.get("std_error", np.nan),
        }
        for extra in ("p_value_noninf", "p_value_nonsup", "p_value_equiv"):
            row[extra] = r.get(extra, np.nan)
        out.append(row)
    return out


def main() -> None:
    data = pd.read_csv(OUT / "data.csv")
    data["g"] = data["g"].astype("category")
    out = []
    for name in ("logit", "poisson"):
        m = fit(name, data)
        for slope in ("dydx", "eyex", "eydx", "dyex"):
            out += rows(avg_slopes(m, variables="income", slope=slope), name, f"slope_{slope}")
        for comp in ("ratio", "lnratio", "lnor", "lift", "ratioavg", "lnratioavg", "lnoravg", "liftavg"):
            if name == "poisson" and comp.startswith("lnor"):
                continue
            out += rows(avg_comparisons(m, variables={"income": forward(0.5)}, comparison=comp), name, f"cmp_{comp}")
        out += rows(avg_predictions(m), name, "pred")
        out += rows(avg_predictions(m, by="g"), name, "pred_by", group_col="g")
        out += rows(avg_comparisons(m, variables={"income": forward(0.5)}, equivalence=[0.0, 0.2]), name, "equiv")
    pd.DataFrame(out).to_csv(OUT / "vocab.csv", index=False, lineterminator="\n", float_format="%.17g")
    (OUT / "vocab_versions.txt").write_text(
        f"python {sys.version.split()[0]}\n"
        + "".join(f"{p} {version(p)}\n" for p in ["marginaleffects", "statsmodels", "polars", "pandas", "numpy"])
    )


if __name__ == "__main__":
    main()
