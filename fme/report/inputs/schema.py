"""The JSON Schema of a report config and its defaults (documented key by key in ``reports/README.md``).

:func:`fme.report.inputs.config.load_config` validates a YAML file against :data:`SCHEMA` and fills in
:data:`DEFAULTS` and, per effect, :data:`EFFECT_DEFAULTS`. Detector names come from the detectors'
registry (:data:`fme.extrapolation.DETECTORS`); the tree parameters of a partition are those of the
method (:data:`PARTITION_PARAMS`).
"""

from __future__ import annotations

from typing import Any

from ...extrapolation import DETECTOR_NAMES as _REGISTERED

__all__ = [
    "SCHEMA",
    "DEFAULTS",
    "EFFECT_DEFAULTS",
    "LEVEL_DEFAULTS",
    "DETECTOR_NAMES",
    "PARTITION_PARAMS",
    "COUNTERPART",
    "JOINT_REGIONS",
]

_NAME = {"type": "string", "minLength": 1}
_STEP_VALUE = {
    "anyOf": [
        {"type": "number"},
        {"type": "string", "minLength": 1},
        {"type": "boolean"},
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "boolean"]}},
    ]
}
_DATA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "path": {
            **_NAME,
            "description": "CSV or Parquet file, relative to the config file; with engine: dask "
            "also a Parquet dataset directory or a glob",
        },
        "dataset": {"enum": ["boston"], "description": "a bundled dataset"},
        "description": {"type": "string"},
        "date": {"type": "string", "description": "date (or period) the data describe"},
        "drop": {"type": "array", "items": _NAME},
    },
    "oneOf": [{"required": ["path"]}, {"required": ["dataset"]}],
}
#: Detector names a config may give besides ``none``: the detectors' registry, so a detector added there is a
#: valid config value at once.
DETECTOR_NAMES: tuple[str, ...] = _REGISTERED
_CTREE_PARAMS = {
    "minbucket": {"type": "number", "exclusiveMinimum": 0},
    "minsplit": {"type": "number", "exclusiveMinimum": 0},
    "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "maxdepth": {"type": "integer", "minimum": 1},
    "testtype": {"enum": ["Bonferroni", "Univariate", "Teststatistic", "teststatistic", "bonferroni", "univariate"]},
    "mincriterion": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
}
_CART_PARAMS = {
    "min_samples_leaf": {"type": "integer", "minimum": 1},
    "min_samples_split": {"type": "integer", "minimum": 2},
    "max_depth": {"type": "integer", "minimum": 1},
    "max_leaf_nodes": {"type": "integer", "minimum": 2},
    "min_impurity_decrease": {"type": "number", "minimum": 0},
    "ccp_alpha": {"type": "number", "minimum": 0},
}
#: Tree parameters per partition method (partykit's names for CTree, scikit-learn's for CART).
PARTITION_PARAMS = {"ctree": tuple(_CTREE_PARAMS), "cart": tuple(_CART_PARAMS)}
#: A parameter of one method -> its counterpart in the other (for "did you mean" messages).
COUNTERPART = {"minbucket": "min_samples_leaf", "minsplit": "min_samples_split", "maxdepth": "max_depth"}
COUNTERPART.update({v: k for k, v in list(COUNTERPART.items())})
_DETECTOR = {
    "anyOf": [
        {"enum": [*DETECTOR_NAMES, "none"]},
        {
            "type": "object",
            "required": ["method"],
            "properties": {"method": {"enum": [*DETECTOR_NAMES, "none"]}},
            "additionalProperties": {"type": ["number", "string", "boolean", "null"]},
            "description": "a detector with parameters (checked against its constructor)",
        },
    ],
}
_INFERENCE_METHODS = ["auto", "delta", "bootstrap", "sample"]
_INFERENCE = {
    "anyOf": [
        {"enum": _INFERENCE_METHODS},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["method"],
            "properties": {
                "method": {"enum": _INFERENCE_METHODS},
                "train_data": _DATA,
                "n_resamples": {"type": "integer", "minimum": 2, "maximum": 100000},
                "ci": {"enum": ["percentile", "normal"]},
                "n_jobs": {"type": "integer"},
            },
        },
    ],
}
#: A fitted model: a joblib file or an entry point (module:function), for ``model`` and ``challenger``.
_MODEL = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "entry_point": {"type": "string", "pattern": r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"},
        "joblib": _NAME,
        "description": {"type": "string"},
        "prediction_scale": {"type": "string"},
        "version": {"type": ["string", "number"], "description": "the model's version (audit trail)"},
        "target_class": {
            "type": ["string", "integer", "boolean"],
            "description": "class whose predicted probability is explained (classifiers)",
        },
    },
    "oneOf": [{"required": ["entry_point"]}, {"required": ["joblib"]}],
}
_PARTITION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "method": {"enum": ["ctree", "cart"]},
        "features": {"type": "array", "items": _NAME, "minItems": 1},
        "n_partitions": {"type": "integer", "minimum": 2},
        "max_leaves": {
            "type": ["integer", "null"],
            "minimum": 2,
            "description": "prune the grown tree to at most this many subspaces (default 8; null: the "
            "grown tree, unpruned, with the method's own defaults)",
        },
        "honest": {
            "type": "boolean",
            "description": "grow the tree on a seeded part of the rows and estimate the leaves on the "
            "other (default true; false: the paper's procedure, intervals not adjusted)",
        },
        "honest_fraction": {
            "type": "number",
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1,
            "description": "share of the evaluated rows that grow the tree (default 0.5)",
        },
        "n_splits": {
            "type": "integer",
            "minimum": 1,
            "maximum": 200,
            "description": "repeat the honest split this many times and report its stability",
        },
        **_CTREE_PARAMS,
        **_CART_PARAMS,
    },
}
#: ``joint_regions``: one partition in which several effects are homogeneous at once (fme.came of a list of
#: effects); the tree settings of an effect's ``partition`` that apply to several effects, and ``standardize``.
#: The ids and the method's parameters are checked by :func:`fme.report.inputs.joint_config.check_joint_regions`.
JOINT_REGIONS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["effects"],
    "description": "one cAME tree grown on the fMEs of several effects at once (fme.came of a list): the tree, "
    "each effect's cAMEs per region and how much of each effect's heterogeneity the regions explain",
    "properties": {
        "effects": {
            "type": "array",
            "items": _NAME,
            "description": "ids of two or more entries of effects (each a single step, not one effect per level)",
        },
        "title": {**_NAME, "description": "the section's heading (default: Joint regions)"},
        **{k: v for k, v in _PARTITION["properties"].items() if k != "n_splits"},
        "standardize": {
            "type": "boolean",
            "description": "grow the tree on each effect's fMEs scaled to SD 1 (default true), so that no effect "
            "decides the splits by its unit; the figures stay in each effect's unit",
        },
    },
}
_STABILITY = {
    "type": "object",
    "additionalProperties": False,
    "description": "refit the partition on random subsamples (fme.partition_stability)",
    "properties": {
        "subsamples": {"type": "integer", "minimum": 2, "maximum": 1000},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    },
}
_LEARNER = {
    "oneOf": [
        {"type": "boolean"},
        {
            "type": "object",
            "additionalProperties": False,
            "description": "refit the model's learner on seeded splits of the training data (fme.learner_ame)",
            "properties": {
                "repeats": {"type": "integer", "minimum": 2, "maximum": 200},
                "test_size": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "n_jobs": {"type": "integer"},
                "train_data": _DATA,
            },
        },
    ],
}
_DATA_LEVEL = {
    "oneOf": [
        {"type": "boolean"},
        {
            "type": "object",
            "additionalProperties": False,
            "description": "the debiased data-level shift effect with positivity diagnostics (fme.dgp_ame)",
            "properties": {"folds": {"type": "integer", "minimum": 2, "maximum": 20}, "train_data": _DATA},
        },
    ],
}
_EFFECT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
        "title": _NAME,
        "steps": {"type": "object", "minProperties": 1, "additionalProperties": _STEP_VALUE},
        "why": {"type": "string"},
        "nlm": {"type": "boolean"},
        "nlm_method": {"enum": ["auto", "exact", "gauss-kronrod", "gauss-legendre", "simpson38"]},
        "extrapolation": _DETECTOR,
        "inference": _INFERENCE,
        "on_extrapolation": {"enum": ["exclude", "keep", "shrink"]},
        "partition": {"oneOf": [{"type": "boolean", "const": False}, _PARTITION]},
        "stability": {"oneOf": [{"type": "boolean", "const": False}, _STABILITY]},
        "learner": _LEARNER,
        "data_level": _DATA_LEVEL,
        "conf_level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "expected_sign": {
            "enum": ["+", "-"],
            "description": "direction the domain owner expects for the AME (plausibility check)",
        },
        "expect": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "description": "effect contracts, tested (fme report --check exits 3 when one is not met)",
            "properties": {
                "sign": {"enum": ["+", "-"]},
                "within": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                "at_least": {"type": "number"},
                "at_most": {"type": "number"},
                "nlm_at_least": {"type": "number", "maximum": 1},
                "share_linear_at_least": {"type": "number", "minimum": 0, "maximum": 1},
                "max_extrapolated": {"type": "number", "minimum": 0, "maximum": 1},
            },
        },
    },
}
_SIGNOFF = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["role"],
        "properties": {"role": _NAME, "name": {"type": "string"}},
    },
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fme interpretation report config",
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "owner", "intended_use", "model", "data", "target", "effects"],
    "properties": {
        "title": _NAME,
        "owner": _NAME,
        "intended_use": _NAME,
        "out_of_scope": {"type": "string"},
        "status": {"enum": ["Draft", "Final"]},
        "signoff": _SIGNOFF,
        "model": _MODEL,
        "interactions": {
            "description": "feature pairs whose interaction (second difference) the report estimates, or auto",
            "oneOf": [
                {"const": "auto"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["auto"],
                    "properties": {"auto": {"type": "integer", "minimum": 2, "maximum": 20}},
                },
                {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["a", "b"],
                        "properties": {
                            "a": {"type": "object", "minProperties": 1},
                            "b": {"type": "object", "minProperties": 1},
                        },
                    },
                },
            ],
        },
        "challenger": {
            **_MODEL,
            "description": "a second model compared effect by effect on the same rows (champion and challenger)",
        },
        "data": _DATA,
        "reference_data": _DATA,
        "test_data": _DATA,
        "target": _NAME,
        "target_unit": {"type": "string"},
        "units": {"type": "object", "additionalProperties": {"type": "string"}},
        "descriptions": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "feature -> what it measures (feature dictionary)",
        },
        "inference": _INFERENCE,
        "flags": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "ep_share": {"type": "number", "minimum": 0, "maximum": 1},
                "anlm": {"type": "number", "maximum": 1},
                "leaf_anlm": {"type": "number", "maximum": 1},
                "leaf_n": {"type": "integer", "minimum": 1},
                "ari": {"type": "number", "minimum": -1, "maximum": 1},
                "dispersion": {"type": "number", "minimum": 0},
                "bootstrap_resamples": {"type": "integer", "minimum": 2},
            },
        },
        "overview": {
            "oneOf": [
                {"type": "boolean", "const": False},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"step": {"enum": ["unit", "sd"]}, "extrapolation": _DETECTOR},
                },
            ]
        },
        "conf_level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "seed": {"type": "integer", "minimum": 0},
        "timestamp": {"type": "boolean"},
        "model_card": {
            "type": "boolean",
            "description": "also write model_card.json (Model Card Toolkit schema 0.0.2)",
        },
        "observations": _NAME,
        "effects": {"type": "array", "minItems": 1, "items": _EFFECT},
        "figures": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_points": {"type": "integer", "minimum": 10},
                "width": {"type": "number", "exclusiveMinimum": 0},
                "png_dpi": {"type": "integer", "minimum": 50, "maximum": 600},
            },
        },
        "pdf": {"type": "boolean"},
        "engine": {
            "enum": ["pandas", "dask"],
            "description": "dask: data paths may be Parquet dataset directories or globs, read with Dask; "
            "the analysis runs out of core (summaries over all rows, per-row figures from "
            "a seeded sample of sample_size rows)",
        },
        "scheduler": {
            **_NAME,
            "description": "address of a Dask scheduler (engine: dask; default: a local "
            "cluster started and closed by the build)",
        },
        "sample_size": {
            "type": "integer",
            "minimum": 10,
            "description": "engine: dask: rows of the seeded sample behind the per-row figures and "
            "tables (default 100000; the summaries are over all rows)",
        },
        "previous": {**_NAME, "description": "results.json of an earlier build: adds a change-log section"},
        "joint_regions": JOINT_REGIONS,
    },
}

DEFAULTS: dict[str, Any] = {
    "status": "Draft",
    "conf_level": 0.95,
    "seed": 0,
    "timestamp": False,
    "pdf": True,
    "out_of_scope": "",
    "units": {},
    "target_unit": "",
    "descriptions": {},
    "inference": "auto",
    "flags": {},
    "overview": {"step": "sd", "extrapolation": "envelope"},
    "figures": {"max_points": 2000, "width": 6.4, "png_dpi": 200},
    "signoff": [
        {"role": "Preparer", "name": ""},
        {"role": "Independent reviewer", "name": ""},
        {"role": "Approver", "name": ""},
    ],
}
EFFECT_DEFAULTS: dict[str, Any] = {
    "why": "",
    "nlm": True,
    "nlm_method": "auto",
    "extrapolation": "envelope",
    "on_extrapolation": "exclude",
    "partition": {"method": "ctree", "max_leaves": 8},
    "stability": {"subsamples": 20, "fraction": 0.5},
}
#: Settings of an effect's learner-level (``learner:``) and data-level (``data_level:``) estimates when the config
#: gives ``true`` or leaves a setting out.
LEVEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "learner": {"repeats": 15, "test_size": 0.5},
    "data_level": {"folds": 5},
}
