"""fme's own work beside a cheap model: ``f(df) = tanh(df.to_numpy() @ beta)`` at memory speed.

One run times, best of ``--repeat``, on 10 standard-normal float features and ``--n`` rows (default 10^6):

* ``fme.fme(f, X, {"x0": 1})`` (two predictions per row),
* ``fme.ame(f, X, {"x0": 1})`` (the same AME, its table),
* ``fme.fme(f, X, {"x0": 1}).tidy()`` (the same AME table by way of ``fme.fme``),
* ``fme.fme(f, X, {"x0": 1}, nlm=True)`` (Gauss-Kronrod with the default budget),

each against its **floor**, measured in the same run: the time spent inside the model's calls during that
fme call (a timing wrapper around ``f``) plus writing the inputs they receive, i.e. every cell the model was
handed except the data itself (its f(x) frame), copied once into already paged-in memory (``np.copyto``,
as ``bench_fme.py``'s write floor). The floor is the least an engine that writes a black-box model's inputs and
then calls it must spend; one that writes the next input on a spare core while the model computes (as fme writes
x + h while the model predicts f(x)) can go below it. Printed: the ratio of each call to its floor (wall time of
the best run over that run's floor), and the ratio of ``fme.ame`` to ``fme.fme`` and to ``fme.fme(...).tidy()``
(the same table). ``--own N``: also
each call's own time (its wall time less the time inside the model), the least and the median of ``N`` further
calls: on a shared machine the least own time moves far less than a ratio to the floor (the floor's own figures
move with the load). Usage::

    python benchmarks/bench_cheap_model.py [--n 1000000] [--repeat 3] [--own 0]
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import fme

P = 10


class Timed:
    """The model ``tanh(X @ beta)`` as a function of a DataFrame, timing its own calls and recording the
    shapes of the inputs it is handed."""

    def __init__(self, beta: np.ndarray) -> None:
        self.beta = beta
        self.seconds = 0.0
        self.shapes: list[tuple[int, int]] = []

    def __call__(self, df: pd.DataFrame) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.tanh(df.to_numpy() @ self.beta)
        self.seconds += time.perf_counter() - t0
        self.shapes.append(df.shape)
        return out

    def reset(self) -> None:
        self.seconds, self.shapes = 0.0, []


def make_data(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, P)), columns=[f"x{j}" for j in range(P)])


def write_time(shapes: list[tuple[int, int]], n: int, repeat: int) -> float:
    """Best time of writing every input the model was handed, less one frame of the data itself (f(x)), once
    into warm memory: one copy per input of its shape's cells."""
    cells = [r * c for r, c in shapes]
    own = n * P
    if own in cells:
        cells.remove(own)  # f(x): the data itself, nothing to write
    if not cells:
        return 0.0
    big = max(cells)
    src, dst = np.ones(big), np.empty(big)
    np.copyto(dst, src)  # page the buffer in before timing
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for m in cells:
            np.copyto(dst[:m], src[:m])
        best = min(best, time.perf_counter() - t0)
    return best


def measure(call: Callable[[], Any], model: Timed, n: int, repeat: int) -> tuple[float, float, float, int]:
    """(wall s, model s, write s, calls) of the best of ``repeat`` runs of ``call``: the run whose wall time over
    its own model time plus the least write time (best of 2 ``repeat`` writes of the inputs it handed the model)
    is the smallest."""
    runs = []
    for _ in range(repeat):
        model.reset()
        t0 = time.perf_counter()
        call()
        runs.append((time.perf_counter() - t0, model.seconds, len(model.shapes)))
    write = write_time(model.shapes, n, 2 * repeat)
    wall, inside, calls = min(runs, key=lambda r: r[0] / (r[1] + write))
    return wall, inside, write, calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--own", type=int, default=0, help="calls per row of the own-time table (0: none)")
    args = ap.parse_args()
    warnings.simplefilter("ignore", fme.FixedModelWarning)  # inference="auto" on a plain function: the sample
    X = make_data(args.n)
    model = Timed(np.linspace(-1.0, 1.0, P) / np.sqrt(P))
    steps = {"x0": 1.0}
    calls = {
        "fme.fme": lambda: fme.fme(model, X, steps),
        "fme.ame": lambda: fme.ame(model, X, steps),
        # the same AME table by way of fme.fme (the same numbers: tests/_local/test_ame.py)
        "fme.fme(...).tidy()": lambda: fme.fme(model, X, steps).tidy(),
        "fme.fme(nlm=True)": lambda: fme.fme(model, X, steps, nlm=True),
    }
    for call in calls.values():  # warm-up: imports, numba's cache, first-touch of pandas paths
        model.reset()
        call()
    print(f"n = {args.n:,}, best of {args.repeat}")
    print("| call | model calls | rows predicted per row | wall s | model s | write s | floor s | wall / floor |")
    print("|---|---|---|---|---|---|---|---|")
    walls = {}
    for name, call in calls.items():
        wall, inside, write, n_calls = measure(call, model, args.n, args.repeat)
        rows = sum(r for r, _ in model.shapes) / args.n
        walls[name] = wall
        floor = inside + write
        print(
            f"| `{name}` | {n_calls} | {rows:.2f} | {wall:.3f} | {inside:.3f} | {write:.3f} | {floor:.3f} | "
            f"**{wall / floor:.2f}** |",
            flush=True,
        )
    print(f"fme.ame / fme.fme (wall): {walls['fme.ame'] / walls['fme.fme']:.2f}")
    same = walls["fme.ame"] / walls["fme.fme(...).tidy()"]
    print(f"fme.ame / fme.fme(...).tidy(), the same AME table (wall): {same:.2f}")
    if args.own:
        print(f"\nfme's own time (wall - model), {args.own} calls each (the NLM: a quarter of them)")
        print("| call | least own ms | median own ms | least model ms |")
        print("|---|---|---|---|")
        for name, call in calls.items():
            own, inside = [], []
            for _ in range(max(1, args.own // 4) if "nlm" in name else args.own):
                model.reset()
                t0 = time.perf_counter()
                call()
                own.append(time.perf_counter() - t0 - model.seconds)
                inside.append(model.seconds)
            least, median = 1e3 * min(own), 1e3 * float(np.median(own))
            print(f"| `{name}` | {least:.1f} | {median:.1f} | {1e3 * min(inside):.1f} |", flush=True)


if __name__ == "__main__":
    main()
