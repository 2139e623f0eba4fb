"""A bare :class:`~fme.report.inputs.config.ReportConfig` for tests that call one stage of the report directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fme.report.inputs.config import ReportConfig


def bare_config(directory: Path, **fields: Any) -> ReportConfig:
    """A config with the required fields filled (no model, data or effects) in ``directory``; ``fields`` set or
    override the others (units, figures, model ...)."""
    base: dict[str, Any] = dict(
        title="T",
        owner="O",
        intended_use="U",
        model={},
        data={},
        target="y",
        effects=(),
        path=Path(directory) / "c.yaml",
        directory=Path(directory),
        name="c",
    )
    return ReportConfig(**{**base, **fields})


#: The YAML of a minimal config file (a model, a data file, one effect); tests append the keys they check.
MINIMAL_YAML = """\
title: T
owner: O
intended_use: U
model: {joblib: m.joblib}
data: {path: data.csv}
target: y
effects:
  - steps: {x1: 1}
"""
