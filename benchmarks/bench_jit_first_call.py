"""The first call of the compiled NLM kernels: numba compiles them once per machine, then loads them from its cache.

Each case runs in fresh processes: once with an empty numba cache (``NUMBA_CACHE_DIR`` set to a new folder:
the kernels are compiled), once more with that cache filled (a later process: numba and the kernels are
loaded), and times the first and the second call in each process. Cases: the exact NLM of a 10-tree random
forest (``fme/_nlm/tree_kernel.py``) and the error-controlled NLM of the same forest wrapped as a plain
function (``fme/_nlm/bracket_kernel.py``), 300 rows. Usage::

    python benchmarks/bench_jit_first_call.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, time, warnings
warnings.simplefilter("ignore")
import numpy as np, pandas as pd
import fme
from sklearn.ensemble import RandomForestRegressor
rng = np.random.default_rng(0)
X = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
m = RandomForestRegressor(10, random_state=0).fit(X, X["a"] ** 2 + X["b"])
case = {"exact": lambda: fme.fme(m, X, {"a": 1.0}, nlm=True, nlm_method="exact", inference="sample"),
        "budget": lambda: fme.fme(lambda d: m.predict(d), X, {"a": 1.0}, nlm=True, inference="sample")}[CASE]
t0 = time.perf_counter(); case(); t1 = time.perf_counter(); case(); t2 = time.perf_counter()
print(json.dumps({"first": t1 - t0, "second": t2 - t1}))
"""


def run(case: str, cache: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", f"CASE = {case!r}\n" + CHILD], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    print(
        "| case | first call, empty cache s | first call, cache filled s | second call s "
        "| compile / cached first call |"
    )
    print("|---|---|---|---|---|")
    for case in ("exact", "budget"):
        cold, warm, second = [], [], []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as cache:
                c = run(case, cache)  # compiles into the empty cache
                w = run(case, cache)  # a later process: loads it
            cold.append(c["first"])
            warm.append(w["first"])
            second.append(w["second"])
        print(
            f"| {case} | {min(cold):.2f} | {min(warm):.3f} | {min(second):.3f} | {min(cold) / min(warm):.0f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
