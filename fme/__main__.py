"""Command line: ``fme report <config.yaml>...``, ``fme render <report dir>...`` and ``fme demo`` (also
``python -m fme``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEMO_CONFIG = Path("reports") / "boston-svm.yaml"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fme", description="Forward marginal effects: interpretation reports.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="build report(s) from YAML config(s) into <config dir>/<name>/",
                       description="Build report.{qmd,html,pdf} per config. Loading a joblib/pickle model or an "
                                   "entry point executes code: only use trusted configs.")
    r.add_argument("configs", nargs="+", help="report config file(s) (YAML)")
    r.add_argument("--out", help="output folder (only with one config; default: <config dir>/<config name>)")
    r.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    r.add_argument("--model-card", action="store_true",
                   help="also write model_card.json (Model Card Toolkit schema) from the built report")
    r.add_argument("--check", action="store_true",
                   help="exit with status 3 when an effect contract (expect:) is not met (the report is still written)")
    r.add_argument("--no-pdf", action="store_true", help="skip the PDF")
    r.add_argument("--renderer", choices=["auto", "pandoc", "quarto"], default="auto",
                   help="auto (default): quarto when on PATH, else pandoc + typst")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bars (default: shown on a terminal only, unless FME_PROGRESS=0)")
    rr = sub.add_parser("render", help="re-render report.{qmd,html,pdf} of built report folder(s) from their "
                                       "results.json, without recomputing",
                        description="Re-render a built report (e.g. reports/boston-svm/) from its kept "
                                    "results.json and build.json with the current templates: the model is not "
                                    "loaded and the analysis notebook is not run.")
    rr.add_argument("dirs", nargs="+", help="report folder(s) written by `fme report`")
    rr.add_argument("--no-pdf", action="store_true", help="skip the PDF (default: re-render it if the folder has one)")
    rr.add_argument("--renderer", choices=["auto", "pandoc", "quarto"], default="auto")
    d = sub.add_parser("demo", help="build the bundled Boston SVM report (reports/boston-svm.yaml)")
    d.add_argument("--force", action="store_true")
    d.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _worked_example() -> None:
    """Print the paper's Boston example (§8) in a few lines: fMEs, NLMs, AMEs, cAMEs."""
    import fme
    from fme.paper import boston_svm

    model, X = boston_svm()
    eff = fme.fme(model, X, {"rm": 1}, nlm=True, nlm_method="simpson38", extrapolation="envelope")
    print(eff.summary())
    print(eff.results.head().round(4).to_string())
    print(fme.ame(model, X, {"rm": 1, "crim": -5, "chas": None}, extrapolation="envelope")
          [["feature", "step", "level", "ame", "std_error", "conf_low", "conf_high", "inference", "sd", "n",
            "n_excluded"]].round(4).to_string())
    print(fme.came(eff, minbucket=100, testtype="teststatistic", mincriterion=0.99).summary())
    print()


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
        configs, out, force, pdf = [str(DEMO_CONFIG)], None, args.force, None
        if not DEMO_CONFIG.exists():
            print(f"fme demo: {DEMO_CONFIG} not found; run it from the repository root.", file=sys.stderr)
            return 2
    else:
        configs, out, force, pdf = args.configs, args.out, args.force, (False if args.no_pdf else None)
        if out is not None and len(configs) > 1:
            print("fme report: --out works with a single config only.", file=sys.stderr)
            return 2
    status = 0
    for cfg in configs:
        try:
            res = build_report(cfg, out, force=force, pdf=pdf, renderer=getattr(args, "renderer", "auto"),
                               progress=False if args.no_progress else None,
                               model_card=True if getattr(args, "model_card", False) else None)
        except ConfigError as exc:  # one line <config>:<line>: <key>: <problem>; details in the log it names
            print(str(exc), file=sys.stderr)
            status = 1
            continue
        if not res["skipped"]:
            print(f"  html: {res['html']}" + (f"\n  pdf:  {res['pdf']}" if res["pdf"] else ""))
        if getattr(args, "check", False) and status == 0:
            failed = _contracts_not_met(Path(res["out_dir"]) / "results.json")
            if failed:
                print(f"fme report --check: {len(failed)} effect contract(s) not met: " + "; ".join(failed),
                      file=sys.stderr)
                status = 3
    return status


def _contracts_not_met(results_path: Path) -> list[str]:
    """'effect: expected' of every contract whose verdict is 'not met' in a built report's results.json."""
    import json

    results = json.loads(results_path.read_text(encoding="utf-8"))
    return [f"{v['id']}: {r['expected']}" for g in results["effects"] for v in g["variants"]
            for r in v.get("contracts") or [] if r.get("verdict") == "not met"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
