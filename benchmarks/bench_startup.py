"""Start-up: what the command line and ``import fme`` cost before any work, against importing the stack.

Each command is a fresh interpreter (``sys.executable``), run alternately ``--repeats`` times in one run; the
table gives the median wall seconds, the ratio to the full stack (``import fme; fme.ame``: the verbs with
pandas, scikit-learn, SciPy, statsmodels' formula support and numba loaded) and which heavy packages each
command imported. Commands:

* ``pandas + sklearn``: ``import pandas, sklearn`` (the baseline the issue names);
* ``import fme``: the package root alone (its public names load on first use);
* ``full stack``: ``import fme; fme.ame``;
* ``fme --help``: the command line's help;
* ``config error``: ``fme report bad.yaml`` on a config with an unknown key (refused by the schema, exit 1).

Usage: ``python benchmarks/bench_startup.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("pandas", "scipy", "sklearn", "statsmodels", "numba", "matplotlib", "lightgbm", "xgboost", "dask")
PROBE = f"import sys; print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"


def commands(bad: Path) -> dict[str, str]:
    cli = "from fme.__main__ import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
    return {
        "pandas + sklearn": "import pandas, sklearn",
        "import fme": "import fme",
        "full stack": "import fme; fme.ame",
        "fme --help": cli.format(argv=["--help"]),
        "config error": cli.format(argv=["report", str(bad)]),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"
        bad.write_text("name: x\nmodel: m.joblib\ndata: d.csv\neffects:\n  - steps: {a: 1}\nbogus_key: 3\n")
        cmds = commands(bad)
        times: dict[str, list[float]] = {k: [] for k in cmds}
        loaded: dict[str, str] = {}
        for _ in range(args.repeats):
            for name, code in cmds.items():
                start = time.perf_counter()
                out = subprocess.run([sys.executable, "-c", code + "\n" + PROBE], capture_output=True, text=True)
                times[name].append(time.perf_counter() - start)
                loaded[name] = out.stdout.rsplit("HEAVY:", 1)[-1].strip()
    full = statistics.median(times["full stack"])
    print("| command | median s | ratio to the full stack | heavy packages imported |")
    print("|---|---|---|---|")
    for name, t in times.items():
        m = statistics.median(t)
        print(f"| {name} | {m:.3f} | {m / full:.2f} | {loaded[name] or '(none)'} |")


if __name__ == "__main__":
    main()
