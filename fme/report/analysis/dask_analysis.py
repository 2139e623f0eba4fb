"""What only a Dask effect needs (``engine: dask``): the seeded sample behind its per-row pieces, and the
extrapolation points of each subspace counted over all rows.

:func:`compute_effect_dask` hands the effect to :func:`fme.report.analysis.effect.compute_effect`, the one
builder of an effect's summary for both engines, with :class:`DaskRows`. What comes from where (the report
says the same, :data:`~fme.report.analysis.effect_parts.SAMPLE_BASED` and
:data:`~fme.report.analysis.effect_parts.ALL_ROWS`):

* over **all rows**, in passes on the cluster (:func:`fme.fme` / :func:`fme.came` on Dask data, read through
  the result's public figures): n and the exclusion counts, AME, SD, standard error and CI, quartiles, the NLM
  summaries, the count of negative fMEs, model-uncertainty intervals, the AME with extrapolation points kept,
  the h/2-h-2h sensitivity table, and every cAME figure of the subspaces (n, cAME, CI, SD, cANLM) and their
  extrapolation points (:meth:`fme.PartitionResult.extrapolation_counts`);
* on a **seeded sample** of ``sample_size`` rows (:func:`fme.report.inputs.sources.sample_rows`): the per-row
  figures, ``tables/<id>-fme.csv``, where the extrapolation points are, the shrunk steps, the evaluated ranges
  of the subspaces' boxes (the sampled evaluated rows in each) and the partition stability refits, which
  resample a partition grown in memory on the sampled rows (every sampled evaluated row: those that grow an
  honest tree and those that estimate its leaves); the cAME tree itself is grown on
  fme's own seeded sample (:data:`fme.effects.DASK_SAMPLE_SIZE` rows).

With no more rows than ``sample_size`` the sample is every row (in order) and the report's numbers equal
those of ``engine: pandas`` (tests/test_report_dask_analysis.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

import fme

from ..._utils.validation import is_categorical
from ..inputs.config import EffectConfig
from ..inputs.sources import sample_rows
from ..inputs.specs import make_detector
from .checks import levels_of
from .effect import compute_effect
from .effect_parts import REPORT_SAMPLE_SIZE, grow_partition, json_num

__all__ = ["compute_effect_dask", "DaskRows"]


def _sample_result(
    model: Any, sample: pd.DataFrame, ref: Any, res: Any, eff: EffectConfig, seed: int, target_class: Any, use_nlm: bool
) -> Any:
    """The pandas FMEResult of the sampled rows, with the all-row steps (rules resolved on all rows)."""
    det_spec = eff.extrapolation
    kwargs: dict[str, Any] = {"reference_data": ref, "random_state": seed, "target_class": target_class}
    if det_spec["method"] != "none":
        kwargs.update(extrapolation=make_detector(det_spec, seed), on_extrapolation=eff.on_extrapolation)
    steps = {st.feature: st.value for st in res.steps}
    out = fme.fme(
        model, sample, steps, nlm=use_nlm, nlm_method=eff.nlm_method, conf_level=float(eff.conf_level), **kwargs
    )
    # a rule such as "sd" was resolved on all reference rows: label the sample's figures with it
    return dataclasses.replace(out, steps=res.steps)


class DaskRows:
    """The per-row pieces of a Dask effect (see the module docstring), for
    :func:`fme.report.analysis.effect.compute_effect`.

    Parameters
    ----------
    sample : DataFrame
        The seeded sample of the rows of the Dask data (pandas), drawn once for every effect.
    """

    sampled = True

    def __init__(self, sample: pd.DataFrame) -> None:
        self.sample = sample

    def rows(
        self,
        model: Any,
        data: Any,
        reference: Any,
        res: Any,
        eff: EffectConfig,
        seed: int,
        target_class: Any,
        use_nlm: bool,
    ) -> tuple[Any, pd.DataFrame, Any]:
        """(the sample's FMEResult, the sample, the frame the detector was fitted on: the causes of the
        extrapolation points compare with its min/max and levels, which the envelope frame holds exactly)."""
        ref_fit = res.detector_frame if res.detector is not None else None
        return _sample_result(model, self.sample, ref_fit, res, eff, seed, target_class, use_nlm), self.sample, ref_fit

    def leaf_extrapolation(self, part: Any, res: Any) -> Any:
        eps = part.extrapolation_counts()  # over all rows; the boxes' evaluated ranges: the tree's rows
        return lambda node: None if eps is None else int(eps[node])

    def levels(self, part: Any, data: Any) -> dict | None:
        """Every categorical partition feature's levels over all rows of the data: an unrestricted categorical
        side of a box lists them, as the pandas report does from the whole data."""
        return {f: levels_of(data, f) for f in part.features if f in data.columns and is_categorical(data[f])}

    def tree_rows(self, part: Any, summary: dict) -> dict[str, Any]:
        """The rows the tree was grown on: fme's seeded sample of the growing rows (all when no more)."""
        return {"tree_rows": int(part.sample_rows), "tree_on_sample": bool(part.grown_on_sample)}

    def box_ranges(self, part: Any, rows: Any, summary: dict) -> None:
        """Each box's evaluated range over the sampled evaluated rows that fall into it (every evaluated row when
        the data have no more rows than ``sample_size``, as in the pandas report), not only over the rows the
        tree was grown on."""
        X = rows.data.loc[rows.results.index, part.features]
        X = X[X.notna().all(axis=1).to_numpy()]
        if not len(X):
            return
        node = part.predict(X)["node"].to_numpy()
        for leaf in summary["leaves"]:
            inside = X[node == int(leaf["node"])]
            for b in leaf["box"]:
                if b["kind"] == "numeric":
                    v = inside[b["feature"]].to_numpy(dtype=float)
                    b["eval_min"], b["eval_max"] = (
                        (json_num(np.nanmin(v)), json_num(np.nanmax(v))) if v.size else (None, None)
                    )

    def stability_partition(self, part: Any, rows: Any, eff: EffectConfig, conf: float, seed: int) -> Any:
        """The partition grown in memory on the sampled rows (the Dask partition's own rows are the sample of the
        growing rows only: an honest refit would find no row to estimate its leaves)."""
        if part is None:
            return None
        return grow_partition(rows, eff, conf, random_state=seed)


def compute_effect_dask(
    model: Any,
    data: Any,
    reference: Any,
    eff: EffectConfig,
    seed: int,
    target_class: Any,
    train: pd.DataFrame | None,
    target: str | None,
    sample: pd.DataFrame | None = None,
    refits: Any = None,
) -> dict:
    """:func:`fme.report.analysis.effect.compute_effect` of Dask ``data``, with the per-row pieces from the seeded
    ``sample`` of its rows (drawn here, of :data:`~fme.report.analysis.effect_parts.REPORT_SAMPLE_SIZE` rows, when
    not given). ``refits``: the build's :class:`fme.inference.RefitCache` (the all-row bootstrap, the sample's and
    the other effects' refit the model once). Returns its dict; ``"dask_result"`` is the all-row result."""
    if sample is None:
        sample = sample_rows(data, int(data.shape[0].compute()), REPORT_SAMPLE_SIZE, seed)[0]
    return compute_effect(
        model, data, reference, eff, seed, target_class, train, target, engine=DaskRows(sample), refits=refits
    )
