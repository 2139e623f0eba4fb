"""
An interpretation report
========================

A report is built from a YAML config: ``fme report reports/boston-svm.yaml`` (or ``make demo``) runs the
analysis notebook and renders HTML and PDF, about 40 s for this three-effect report on two cores. That is too
slow to run for every build of this site, so this example does the first, fast step of a build (reading and
validating the config, with the defaults the loader fills in) and then **shows a page of a report built
earlier by** ``fme report`` (a PNG committed under ``docs/_static/``), not one built now.
"""

from pathlib import Path

import matplotlib.pyplot as plt

import fme
from fme.report.inputs.config import load_config

root = Path(fme.__file__).resolve().parents[1]  # the checkout: reports/ and docs/ beside the package
config = load_config(root / "reports" / "boston-svm.yaml")
cfg = config.to_dict()
print(cfg["title"], "|", cfg["status"], "| model:", cfg["model"]["entry_point"])
for effect in cfg["effects"]:
    print(f"  {effect['id']:>8}: steps {effect['steps']}, extrapolation {effect['extrapolation']}, "
          f"partition {(effect['partition'] or {}).get('method')}")

# %%
# A page of the built report's PDF (the first effect: its summary sentence, the extrapolation check and
# its figure). Every key a config may set: the site's "Report config keys" page.
page = plt.imread(root / "docs" / "_static" / "report-page.png")
fig, ax = plt.subplots(figsize=(6.8, 8.8))
ax.imshow(page)
ax.set_axis_off()
fig.tight_layout()
