"""fME, AME and the default NLM of a PyTorch network on its own device, against the network's own predictions.

A 10-256-256-1 ReLU network (seeded random weights, float32) wrapped as a plain function of a torch tensor;
the data a (rows x 10) tensor on the same device, passed to :func:`fme.fme` / :func:`fme.ame` with
``feature_names=`` (the array route, :mod:`fme._local.arrays`: the stepped points are built on the device, only
the predictions come to the host). Timed, best of ``--repeat``, device synchronised around each call:

* ``two predictions``: f(X) and f(X + h) called directly on the device tensors (the least any fME can cost);
* ``fme.fme``, ``fme.ame`` (one feature, the same AME), ``fme.fme(..., nlm=True)`` (the default error-controlled
  Gauss-Kronrod NLM, budget 34 predictions per row);
* ``its predictions``: the time the NLM call spent inside the network (the rows it asked for, synchronised),

and printed with the ratios fme.fme / two predictions and NLM / its predictions, and each call's own work: its
time outside the network's calls (building the points, moving them and the predictions, the bookkeeping), the
figure that a busy machine disturbs least.

Rows: 10**7 on CUDA when available, else 10**5 on PyTorch's CPU build (``--rows`` overrides); without PyTorch
the script says so and exits 0. ``--backend numpy`` runs the same network written in NumPy (float64) on NumPy
arrays (the array route without PyTorch, on the CPU) and, for comparison, ``fme.fme`` and the NLM of the
DataFrame route of the same function (10**5 rows by default).

Usage: ``python benchmarks/bench_gpu.py [--rows N] [--repeat 3] [--backend torch|numpy] [--hidden 256]``
(``--hidden``: the width of the hidden layers; a narrow network makes the model cheap, so fme's own work shows).
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
NAMES = [f"x{j}" for j in range(P)]


def _weights(hidden: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """He-initialised float32 weights of the 10-hidden-hidden-1 network (seeded)."""
    rng = np.random.default_rng(seed)
    sizes = [P, hidden, hidden, 1]
    return [
        (
            (rng.normal(size=(a, b)) * np.sqrt(2.0 / a)).astype(np.float32),
            (rng.normal(size=b) * 0.1).astype(np.float32),
        )
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


class Timed:
    """The network as a function of an array, counting the rows and the (synchronised) seconds it was called for."""

    def __init__(self, net: Callable[[Any], Any], sync: Callable[[], None]) -> None:
        self.net, self.sync = net, sync
        self.rows, self.seconds = 0, 0.0

    def __call__(self, x: Any) -> Any:
        self.sync()
        t0 = time.perf_counter()
        out = self.net(x)
        self.sync()
        self.seconds += time.perf_counter() - t0
        self.rows += int(x.shape[0])
        return out

    def reset(self) -> None:
        self.rows, self.seconds = 0, 0.0


def torch_setup(rows: int | None, hidden: int) -> tuple[Timed, Any, Callable[[], None], str, Any] | None:
    try:
        import torch
    except ImportError:
        return None
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    n = rows or (10**7 if cuda else 10**5)
    layers = []
    for W, b in _weights(hidden):
        lin = torch.nn.Linear(W.shape[0], W.shape[1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
        layers += [lin, torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1]).to(device).eval()

    @torch.inference_mode()
    def f(x: Any) -> Any:
        return net(x)[:, 0]

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    X = torch.from_numpy(np.random.default_rng(1).normal(size=(n, P)).astype(np.float32)).to(device)
    where = f"PyTorch {torch.__version__} on {torch.cuda.get_device_name() if cuda else 'the CPU'}"
    return Timed(f, sync), X, sync, where, lambda x: x.clone()


def numpy_setup(rows: int | None, hidden: int) -> tuple[Timed, Any, Callable[[], None], str, Any]:
    # float64 here, so that the DataFrame route (float64 frames) predicts the very same points
    weights = [(W.astype(np.float64), b.astype(np.float64)) for W, b in _weights(hidden)]

    def f(x: np.ndarray) -> np.ndarray:
        h = x
        for i, (W, b) in enumerate(weights):
            h = h @ W + b
            if i < len(weights) - 1:
                np.maximum(h, 0, out=h)
        return h[:, 0]

    n = rows or 10**5
    X = np.random.default_rng(1).normal(size=(n, P))
    return Timed(f, lambda: None), X, lambda: None, f"NumPy {np.__version__} on the CPU (float64)", lambda x: x.copy()


class Breakdown:
    """fme's own work on the array route split by where it goes, timed (synchronised) around the two functions
    that touch the device: building the points x + t h (``_PathPoints.points``) and bringing the predictions to
    the host (``to_host``); the rest of the call outside the network is the host's bookkeeping. Patched in for
    one call with ``with Breakdown(sync) as b:``."""

    def __init__(self, sync: Callable[[], None]) -> None:
        self.sync = sync
        self.seconds = {"points": 0.0, "to_host": 0.0}

    def _timed(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            self.sync()
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            self.sync()
            self.seconds[key] += time.perf_counter() - t0
            return out

        return run

    def __enter__(self) -> Breakdown:
        from fme._adapters import array_function

        self._saved = (array_function._PathPoints.points, array_function.to_host)
        array_function._PathPoints.points = self._timed("points", self._saved[0])  # type: ignore[method-assign]
        array_function.to_host = self._timed("to_host", self._saved[1])
        return self

    def __exit__(self, *exc: Any) -> None:
        from fme._adapters import array_function

        array_function._PathPoints.points, array_function.to_host = self._saved  # type: ignore[method-assign]


def best(fn: Callable[[], Any], repeat: int, sync: Callable[[], None]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=("torch", "numpy"), default="torch")
    parser.add_argument("--hidden", type=int, default=256, help="width of the two hidden layers")
    args = parser.parse_args()
    warnings.simplefilter("ignore", fme.FixedModelWarning)
    setup = torch_setup(args.rows, args.hidden) if args.backend == "torch" else numpy_setup(args.rows, args.hidden)
    if setup is None:
        print("PyTorch is not installed: nothing to measure (pip install torch, or --backend numpy).")
        return
    model, X, sync, where, copy = setup
    n = int(X.shape[0])
    print(f"{where}: a 10-{args.hidden}-{args.hidden}-1 ReLU network, {n} rows x {P} features, best of {args.repeat}")
    steps = {"x0": 1.0}
    moved = copy(X)
    moved[:, 0] = moved[:, 0] + 1.0

    def two() -> Any:
        return model(X), model(moved)

    t_two, _ = best(two, args.repeat, sync)

    def runs(call: Callable[[], Any]) -> tuple[float, float, int, Any]:
        """Best of ``--repeat`` by wall time: (wall, seconds inside the network, rows predicted, result)."""
        got = []
        for _ in range(args.repeat):
            model.reset()
            sync()
            t0 = time.perf_counter()
            out = call()
            sync()
            got.append((time.perf_counter() - t0, model.seconds, model.rows, out))
        return min(got, key=lambda g: g[0])

    def line(name: str, got: tuple[float, float, int, Any], base: str) -> None:
        wall, inside, rows, _ = got
        ratio = wall / (t_two if base == "two" else inside)
        against = "two predictions" if base == "two" else "its predictions"
        print(
            f"  {name:<26}{wall:9.3f} s  {ratio:6.2f}x {against}; fme's own work {wall - inside:.3f} s "
            f"({rows / n:.1f} predictions per row)"
        )

    fme_run = runs(lambda: fme.fme(model, X, steps, feature_names=NAMES))
    ame_run = runs(lambda: fme.ame(model, X, steps, feature_names=NAMES, inference="sample"))
    nlm_run = runs(lambda: fme.fme(model, X, steps, feature_names=NAMES, nlm=True))
    res, table, nlm = fme_run[3], ame_run[3], nlm_run[3]
    assert abs(float(table["ame"].iloc[0]) - float(res.ame)) <= 1e-12 * max(1.0, abs(float(res.ame)))
    print(f"  {'two predictions':<26}{t_two:9.3f} s")
    line("fme.fme", fme_run, "two")
    line("fme.ame", ame_run, "two")
    line("fme.fme(nlm=True)", nlm_run, "its")
    print(f"  (ANLM {float(nlm.anlm):.4f})")
    # one more NLM call, split: where fme's own work goes (the points and the transfers are timed with the
    # device synchronised, so the split is exact but this call runs a little slower than the ones above)
    model.reset()
    with Breakdown(sync) as split:
        sync()
        t0 = time.perf_counter()
        fme.fme(model, X, steps, feature_names=NAMES, nlm=True)
        sync()
        wall = time.perf_counter() - t0
    pts, host = split.seconds["points"], split.seconds["to_host"]
    print(
        f"  NLM's own work {wall - model.seconds:.3f} s: building the points {pts:.3f} s, predictions to the host "
        f"{host:.3f} s, the host's bookkeeping {wall - model.seconds - pts - host:.3f} s"
    )
    if args.backend == "numpy" and n <= 10**6:
        frame = pd.DataFrame(X, columns=NAMES)

        def on_frame(d: pd.DataFrame) -> Any:
            return model(d.to_numpy(dtype=float))

        line("DataFrame route: fme.fme", runs(lambda: fme.fme(on_frame, frame, steps)), "two")
        frame_nlm = runs(lambda: fme.fme(on_frame, frame, steps, nlm=True))
        line("DataFrame route: NLM", frame_nlm, "its")
        diff = np.nanmax(np.abs(frame_nlm[3].results["nlm"].to_numpy() - nlm.results["nlm"].to_numpy()))
        print(f"  (largest difference between the two routes' NLMs: {diff:.1e})")


if __name__ == "__main__":
    main()
