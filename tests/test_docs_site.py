"""The documentation site in a real browser: it builds (warnings are errors, every reference checked), and its
pages load from disk without a console error, with every image loaded, and without a single request leaving
the machine (no CDN, no web font, MathJax served locally).

Uses Playwright's sync API with the system chromium, as tests/report/test_build.py does; skipped when either
is missing (CI installs chromium: .ci/run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: One page of each kind: home, user guide (with executed examples), gallery (figures), API, paper (math).
PAGES = ["index.html", "guide/nlm.html", "gallery/plot_01_boston_svm.html", "api/generated/fme.fme.html", "paper.html"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("sphinx")
    out = tmp_path_factory.mktemp("site") / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html", str(REPO / "docs"), str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return out


def test_site_has_a_page_per_public_name(site):
    import fme
    import fme.plotting

    for name in fme.__all__:
        assert (site / "api" / "generated" / f"fme.{name}.html").exists(), name
    for name in fme.plotting.__all__:
        assert (site / "api" / "generated" / f"fme.plotting.{name}.html").exists(), name
    config = (site / "api" / "config.html").read_text(encoding="utf-8")
    from fme.report.inputs.schema import SCHEMA

    for key in SCHEMA["properties"]:
        assert f'<code class="docutils literal notranslate"><span class="pre">{key}</span></code>' in config, key


def test_pages_load_offline_without_errors(site):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    problems: dict[str, list[str]] = {}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for rel in PAGES:
                page = browser.new_page()
                errors: list[str] = []
                outside: list[str] = []

                def route(r, outside=outside):
                    url = r.request.url
                    if url.startswith(("file:", "data:", "blob:")):
                        r.continue_()
                    else:
                        outside.append(url)
                        r.abort()

                page.route("**/*", route)
                page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.goto((site / rel).resolve().as_uri())
                page.wait_for_load_state("networkidle")
                images = page.eval_on_selector_all("img", "els => els.map(e => [e.src, e.complete, e.naturalWidth])")
                broken = [src for src, complete, width in images if not (complete and width > 0)]
                if errors or outside or broken:
                    problems[rel] = (
                        errors
                        + [f"request left the machine: {u}" for u in outside]
                        + [f"image not loaded: {src}" for src in broken]
                    )
                if rel.startswith("gallery/"):
                    assert images, "the gallery page shows its figures"
                page.close()
        finally:
            browser.close()
    assert problems == {}
