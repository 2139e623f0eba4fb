"""Command line: ``fme report <config.yaml>...``, ``fme render <report dir>...`` and ``fme demo`` (also
``python -m fme``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._utils.numfmt import count

#: The bundled report config, found from the package (so ``fme demo`` works from any working directory).
DEMO_CONFIG = Path(__file__).resolve().parents[1] / "reports" / "boston-svm.yaml"

#: Every term the worked example prints, explained in one line (printed under the part that shows it).
DEMO_TERMS: dict[str, str] = {
    "KernlabSVR": "the paper's model: an RBF support vector regression with R kernlab's preprocessing "
    "(fme.paper.boston_svm), so the numbers match the paper's R code",
    "fME": "f(x with the step) - f(x) for one row, in the target's units (medv: $1000)",
    "AME": "the average fME over the evaluated rows",
    "extrapolation": "rows whose stepped point leaves the data's envelope (per-feature min-max box) are left out "
    "and counted (excluded, n_excluded)",
    "sample: model held fixed": "the interval is the spread of the fMEs over the rows; the SVM's own estimation "
    "uncertainty is not in it (pass bootstrap= to include it)",
    "NLM": "1 when the prediction moves along the straight line from f(x) to f(x + h), lower the more it bends "
    "(can be negative); ANLM = its average, share >= 0.9 = rows that are nearly linear",
    "simpson38": "the paper's quadrature rule for the NLM (R fmeffects), pinned here to reproduce its numbers; "
    "the default (auto) is more accurate",
    "nlm_status": "ok = the NLM meets the accuracy asked for; inaccurate, flat (varies only at rounding level) "
    "and constant (no variation) are counted apart",
    "level": "a categorical step: every row not at the level is moved to it (chas 0 -> 1 and 1 -> 0)",
    "cAME": "the AME in a subspace: a leaf of a conditional inference tree grown on the fMEs",
    "CoV": "coefficient of variation of the fMEs (SD / |cAME|): small when the cAME describes the leaf's rows well",
    "cANLM": "the average NLM in a subspace",
    "honest": "the tree is grown on one part of the rows and every leaf figure comes from the other part, so the "
    "leaf intervals hold for the leaves the tree chose",
}
DEMO_GUIDE = "docs/guide/ (or the site built by `make docs`: docs/_build/html/index.html)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fme", description="Forward marginal effects: interpretation reports.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "report",
        help="build report(s) from YAML config(s) into <config dir>/<name>/",
        description="Build report.{qmd,html,pdf} per config. Loading a joblib/pickle model or an "
        "entry point executes code: only use trusted configs.",
    )
    r.add_argument("configs", nargs="+", help="report config file(s) (YAML)")
    r.add_argument("--out", help="output folder (only with one config; default: <config dir>/<config name>)")
    r.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    r.add_argument(
        "--model-card",
        action="store_true",
        help="also write model_card.json (Model Card Toolkit schema) from the built report",
    )
    r.add_argument(
        "--check",
        action="store_true",
        help="exit with status 3 when an effect contract (expect:) is not met (the report is still written)",
    )
    r.add_argument("--no-pdf", action="store_true", help="skip the PDF")
    r.add_argument(
        "--renderer",
        choices=["auto", "pandoc", "quarto"],
        default="auto",
        help="auto (default): quarto when on PATH, else pandoc + typst",
    )
    r.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars (default: shown on a terminal only, unless FME_PROGRESS=0)",
    )
    rr = sub.add_parser(
        "render",
        help="re-render report.{qmd,html,pdf} of built report folder(s) from their results.json, without recomputing",
        description="Re-render a built report (e.g. reports/boston-svm/) from its kept "
        "results.json and build.json with the current templates: the model is not "
        "loaded and the analysis notebook is not run.",
    )
    rr.add_argument("dirs", nargs="+", help="report folder(s) written by `fme report`")
    rr.add_argument("--no-pdf", action="store_true", help="skip the PDF (default: re-render it if the folder has one)")
    rr.add_argument("--renderer", choices=["auto", "pandoc", "quarto"], default="auto")
    d = sub.add_parser("demo", help="build the bundled Boston SVM report (reports/boston-svm.yaml)")
    d.add_argument("--force", action="store_true")
    d.add_argument("--no-progress", action="store_true", help="no progress bars")
    d.add_argument("--no-report", action="store_true", help="print the worked example only; build no report")
    return p


def _explain(*terms: str) -> None:
    print("\n  What the terms above mean:")
    for term in terms:
        print(f"  {term}: {DEMO_TERMS[term]}")
    print()


def _worked_example() -> None:
    """Print the paper's Boston example (§8) in a few lines: fMEs, NLMs, AMEs, cAMEs, each term explained."""
    import fme
    from fme.paper import boston_svm

    print("fme demo: the paper's Boston housing example (section 8), forward marginal effects of an SVM\n")
    model, X = boston_svm()
    print(
        f"Model: {type(model).__name__} (medv, the median home value, on {count(X.shape[1], 'feature')} of "
        f"{X.shape[0]} census tracts)"
    )
    _explain("KernlabSVR")
    print("1. One more room (rm + 1): fMEs and their non-linearity (NLM)\n")
    # inference="sample": the paper's fixed-model interval; asking for it by name also says what it covers
    eff = fme.fme(model, X, {"rm": 1}, nlm=True, nlm_method="simpson38", extrapolation="envelope", inference="sample")
    print(eff.summary())
    print(eff.results.head().round(4).to_string())
    _explain("fME", "AME", "extrapolation", "sample: model held fixed", "NLM", "simpson38", "nlm_status")
    print("2. AMEs of three steps: one more room, 5 points less crime, the river (chas) switched\n")
    print(
        fme.ame(model, X, {"rm": 1, "crim": -5, "chas": None}, extrapolation="envelope", inference="sample")[
            [
                "feature",
                "step",
                "level",
                "ame",
                "std_error",
                "conf_low",
                "conf_high",
                "inference",
                "sd",
                "n",
                "n_excluded",
            ]
        ]
        .round(4)
        .to_string()
    )
    _explain("level")
    print("3. Where the effect of one more room differs: cAMEs on subspaces\n")
    print(fme.came(eff, minbucket=100, testtype="teststatistic", mincriterion=0.99).summary())
    _explain("cAME", "CoV", "cANLM", "honest")
    print(f"More on each term: {DEMO_GUIDE}\n")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .report.build import build_report
    from .report.inputs.config import ConfigError

    if args.command == "render":
        from .report.build import render_report

        status = 0
        for folder in args.dirs:
            try:
                res = render_report(folder, pdf=False if args.no_pdf else None, renderer=args.renderer)
            except ConfigError as exc:
                print(str(exc), file=sys.stderr)
                status = 1
                continue
            print(f"  html: {res['html']}" + (f"\n  pdf:  {res['pdf']}" if res["pdf"] else ""))
        return status
    if args.command == "demo":
        _worked_example()
        if args.no_report:
            return 0
        configs, out, force, pdf = [str(DEMO_CONFIG)], None, args.force, None
        if not DEMO_CONFIG.exists():
            print(
                f"fme demo: the bundled report config {DEMO_CONFIG} is not there (it ships with a checkout of the "
                "repository, not with the wheel); the worked example above needs no files.",
                file=sys.stderr,
            )
            return 2
        print(f"Building the bundled report {DEMO_CONFIG} (about a minute; unchanged inputs are not rebuilt) ...")
    else:
        configs, out, force, pdf = args.configs, args.out, args.force, (False if args.no_pdf else None)
        if out is not None and len(configs) > 1:
            print("fme report: --out works with a single config only.", file=sys.stderr)
            return 2
    status = 0
    for cfg in configs:
        try:
            res = build_report(
                cfg,
                out,
                force=force,
                pdf=pdf,
                renderer=getattr(args, "renderer", "auto"),
                progress=False if args.no_progress else None,
                model_card=True if getattr(args, "model_card", False) else None,
            )
        except ConfigError as exc:  # one line <config>:<line>: <key>: <problem>; details in the log it names
            print(str(exc), file=sys.stderr)
            status = 1
            continue
        if not res["skipped"]:
            print(f"  html: {res['html']}" + (f"\n  pdf:  {res['pdf']}" if res["pdf"] else ""))
        if getattr(args, "check", False) and status == 0:
            failed = _contracts_not_met(Path(res["out_dir"]) / "results.json")
            if failed:
                print(
                    f"fme report --check: {len(failed)} effect contract(s) not met: " + "; ".join(failed),
                    file=sys.stderr,
                )
                status = 3
    return status


def _contracts_not_met(results_path: Path) -> list[str]:
    """'effect: expected' of every contract whose verdict is 'not met' in a built report's results.json."""
    import json

    results = json.loads(results_path.read_text(encoding="utf-8"))
    return [
        f"{v['id']}: {r['expected']}"
        for g in results["effects"]
        for v in g["variants"]
        for r in v.get("contracts") or []
        if r.get("verdict") == "not met"
    ]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
