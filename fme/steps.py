"""Step specifications and stepping of observations (paper §3.2, §5.1, §5.2).

A *step* moves one feature of every observation: a numeric feature by ``h``
(``x_j + h_j``), a categorical feature to a reference level ``c_h`` (the
observation-wise categorical ME, Eq. new_categorical_me). Several steps at
once form the multivariate fME (Eq. multivariate_fME).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._utils.memory import Scratch, copy_on_write
from ._utils.stats import median, quartiles
from ._utils.threads import MIN_CELLS_PER_THREAD, chunks_beside, rows_per_thread, run_ranges, thread_count
from ._utils.validation import check_data, is_categorical, is_complex, is_numeric, mixed_object_numbers
from .exceptions import DataError, FeatureError, ParameterError, StepError

__all__ = [
    "Step",
    "classic_contrast",
    "check_classic_keys",
    "CLASSIC_KEYS",
    "STEP_RULES",
    "MIN_STEP_FRACTION",
    "STACK_CELL_BUDGET",
    "step_size",
    "parse_steps",
    "apply_steps",
    "moving",
    "stack_path",
    "stepped_rows",
    "levels",
    "same_level",
    "set_level",
    "check_training_levels",
    "RULE_RE",
    "all_float",
    "numeric_shift",
]

#: Dispersion rules for choosing a numeric step (paper §4.2, "Step Size and Extrapolation Risk").
STEP_RULES = ("sd", "iqr", "mad", "unit")
#: The smallest share of its nominal length h a step keeps under ``on_extrapolation="shrink"`` (per feature):
#: a row whose x + s h stays outside the reference for every s of at least this share is left out as an
#: extrapolation point instead (paper §4.2; a step shrunk to ~1e-8 h no longer answers the question asked).
MIN_STEP_FRACTION = 0.01
#: Cells (rows x columns) of one stacked NLM frame (:func:`stack_path`): 4e6 float64 cells, 32 MB.
#: Kept below glibc's largest mmap threshold (32 MB) so the stack and the model's prediction arrays
#: are reused from the heap instead of being page-faulted anew for every batch; with 5e7 cells
#: (400 MB) a Dask worker thread spent three times the CPU of the kernel itself on page faults
#: (107 000 against 14 000 minor faults per 5e5-row partition; benchmarks/README.md, "Dask").
STACK_CELL_BUDGET = 4_000_000
RULE_RE = re.compile(r"^\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)?\s*\*?\s*(sd|iqr|mad|unit)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Step:
    """One feature's step.

    Attributes
    ----------
    feature : str
        Column name.
    kind : {'numeric', 'categorical'}
        Numeric steps add ``value``; categorical steps set the level ``value``.
    value : float or object
        The numeric step ``h`` or the reference level ``c_h``.
    rule : str or None
        The rule the numeric step came from (``"sd"``, ``"2*iqr"``, ...), if any.
    """

    feature: str
    kind: str
    value: Any
    rule: str | None = None

    @property
    def is_numeric(self) -> bool:
        return self.kind == "numeric"

    def describe(self) -> str:
        """Readable form, e.g. ``rm + 1`` or ``chas -> 1`` or ``age + 17.3 (1*sd)``."""
        if self.is_numeric:
            sign = "-" if self.value < 0 else "+"
            text = f"{self.feature} {sign} {abs(self.value):.6g}"
            return f"{text} ({self.rule})" if self.rule else text
        return f"{self.feature} -> {self.value!r}"


def step_size(data: pd.DataFrame, feature: str, rule: str = "sd", scale: float = 1.0) -> float:
    """A numeric step chosen from the spread of a feature (paper §4.2).

    Parameters
    ----------
    data : DataFrame
        Data whose spread defines the step; pass the *training* data, because
        the step should be meaningful on the scale the model was trained on.
    feature : str
        Numeric column.
    rule : {'sd', 'iqr', 'mad', 'unit'}, default='sd'
        ``sd``: sample standard deviation (n - 1), as Mize et al. suggest;
        ``iqr``: interquartile range; ``mad``: median absolute deviation
        (unscaled); ``unit``: 1.
    scale : float, default=1.0
        Multiplier (negative for a decrease).

    Returns
    -------
    float
    """
    data = check_data(data)
    if feature not in data.columns:
        raise FeatureError(_unknown_feature_message(feature, data))
    if not is_numeric(data[feature]):
        raise StepError(f"feature {feature!r} is categorical; step rules apply to numeric features only.")
    rule_l = str(rule).lower()
    if rule_l not in STEP_RULES:
        raise ParameterError(f"unknown step rule {rule!r}; use one of {', '.join(STEP_RULES)}.")
    if not isinstance(scale, numbers.Real) or not np.isfinite(scale) or scale == 0:
        raise StepError(f"scale for the step of {feature!r} must be a finite non-zero number, got {scale!r}.")
    x = data[feature].to_numpy(dtype=float, na_value=np.nan)
    x = x[np.isfinite(x)]  # missing and infinite values carry no spread
    if rule_l == "unit":
        base = 1.0
    elif x.size < 2:
        raise StepError(f"feature {feature!r} has fewer than 2 non-missing values; rule {rule!r} is undefined.")
    elif rule_l == "sd":
        base = float(np.std(x, ddof=1))
    elif rule_l == "iqr":
        q25, q75 = quartiles(x)  # np.quantile's numbers without its slow multi-position partition
        base = float(q75 - q25)
    else:  # scipy's median_abs_deviation(x, scale=1.0): the median of |x - median(x)|, the same numbers
        base = median(np.abs(x - median(x)))
    h = base * float(scale)
    if h == 0 or not np.isfinite(h):
        raise StepError(
            f"rule {rule!r} gives a step of {h} for feature {feature!r} (no spread); choose another rule or a number."
        )
    return h


def _unknown_feature_message(feature: Any, data: pd.DataFrame) -> str:
    cols = list(map(str, data.columns))
    shown = ", ".join(cols[:20]) + (", ..." if len(cols) > 20 else "")
    return f"unknown feature {feature!r}: not a column of the data (columns: {shown})."


def levels(series: pd.Series) -> list:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return list(series.cat.categories)
    if pd.api.types.is_bool_dtype(series.dtype):
        return [False, True]
    return sorted(series.dropna().unique().tolist(), key=str)


def _parse_numeric(feature: str, value: Any, rule_data: pd.DataFrame) -> Step:
    if isinstance(value, str):
        m = RULE_RE.match(value)
        if m is None:
            # a scaled word ('2*sdd'): a rule whose name is unknown, not a level
            word = re.fullmatch(r"\s*[+-]?\s*(?:\d+(?:\.\d*)?|\.\d+)?\s*\*?\s*([A-Za-z_]\w*)\s*", value)
            if word is not None and re.search(r"[\d*]", value):
                raise StepError(
                    f"feature {feature!r}: unknown step rule {word.group(1)!r} in {value!r}; the rules are "
                    f"{', '.join(STEP_RULES)} (optionally scaled like '-2*sd')."
                )
            raise StepError(
                f"feature {feature!r} is numeric: its step must be a number or a rule "
                f"({', '.join(STEP_RULES)}, optionally scaled like '-2*sd'), got the level-like {value!r}."
            )
        sign, mult, rule = m.groups()
        scale = (float(mult) if mult else 1.0) * (-1.0 if sign == "-" else 1.0)
        h = step_size(rule_data, feature, rule.lower(), scale)
        return Step(feature, "numeric", h, rule=value.strip())
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise StepError(
            f"feature {feature!r} is numeric: its step must be a real number, got {type(value).__name__} {value!r}."
        )
    h = float(value)
    if not math.isfinite(h):
        raise StepError(f"the step of feature {feature!r} is {h}; use a finite number.")
    if h == 0:
        raise StepError(f"the step of feature {feature!r} is 0, which moves nothing; use a non-zero step.")
    return Step(feature, "numeric", h)


def parse_steps(data: pd.DataFrame, steps: Any, rule_data: pd.DataFrame | None = None) -> tuple[Step, ...]:
    """Validate ``steps`` against ``data`` and return one :class:`Step` per feature.

    Parameters
    ----------
    data : DataFrame
        Data the steps are applied to.
    steps : mapping of str to number, rule or level
        ``{feature: h}`` for numeric features (``h`` may be a rule such as
        ``"sd"``), ``{feature: level}`` for categorical ones.
    rule_data : DataFrame, optional
        Data whose spread turns rules into numbers (the training data);
        defaults to ``data``.
    """
    if not isinstance(steps, Mapping):
        raise StepError(
            f"`steps` must be a dict mapping feature names to steps, e.g. {{'age': 1}}, got {type(steps).__name__}."
        )
    if len(steps) == 0:
        raise StepError("`steps` is empty; name at least one feature and its step, e.g. {'age': 1}.")
    rule_data = data if rule_data is None else rule_data
    parsed = []
    for feature, value in steps.items():
        if feature not in data.columns:
            raise FeatureError(_unknown_feature_message(feature, data))
        col = data[feature]
        if is_complex(col):
            raise StepError(
                f"feature {feature!r} is complex-valued: a step would drop its imaginary part. Step a real "
                f"column instead (e.g. split it into {feature}_real and {feature}_imag)."
            )
        mixed = mixed_object_numbers(col) if isinstance(value, numbers.Real) else []
        if mixed:
            raise StepError(
                f"feature {feature!r} is an object column holding numbers (values such as {mixed}), so the "
                f"numeric step {value!r} would be read as a move to the level {value!r}. Convert the column: "
                f"pd.to_numeric(data[{feature!r}], errors='coerce') for a numeric step (text becomes NaN and the "
                f"row is left out), or data[{feature!r}].astype(str) / .astype('category') to step to a level."
            )
        if is_categorical(col):
            if pd.api.types.is_bool_dtype(col.dtype) and not isinstance(value, (bool, np.bool_)):
                raise StepError(f"feature {feature!r} is boolean: its step is a level, True or False, not {value!r}.")
            known = levels(col)
            if (
                rule_data is not data
                and feature in rule_data.columns
                and not isinstance(col.dtype, pd.CategoricalDtype)
            ):
                # the reference (training) data knows levels a subset or a grid (MEM/MER) may lack;
                # a pandas categorical's own categories are its complete set of levels
                known += [lv for lv in levels(rule_data[feature]) if not any(same_level(lv, k) for k in known)]
            if not any(same_level(value, lv) for lv in known):
                kind = "a numeric step" if isinstance(value, numbers.Real) and not isinstance(value, bool) else "level"
                raise StepError(
                    f"feature {feature!r} is categorical: give one of its levels {known[:20]}, not {kind} {value!r}."
                )
            level = next(lv for lv in known if same_level(value, lv))
            parsed.append(Step(feature, "categorical", level))
        elif is_numeric(col):
            if rule_data is not data and feature not in rule_data.columns:
                raise FeatureError(f"feature {feature!r} is missing from the reference data used for step rules.")
            if rule_data is not data and not is_numeric(rule_data[feature]):
                ref = rule_data[feature]
                raise DataError(
                    f"feature {feature!r} is numeric in the data but {ref.dtype} in reference_data (values such as "
                    f"{ref.dropna().unique()[:3].tolist()}); pass reference data whose {feature!r} column is "
                    f"numeric, e.g. pd.to_numeric(reference_data[{feature!r}], errors='coerce')."
                )
            parsed.append(_parse_numeric(feature, value, rule_data))
        else:
            raise StepError(f"feature {feature!r} has dtype {col.dtype}, which is neither numeric nor categorical.")
    return tuple(parsed)


def check_training_levels(steps: Iterable[Step], known: Mapping[str, Sequence[Any]]) -> None:
    """Refuse a categorical step to a level the fitted model never saw.

    ``known`` maps columns to the training levels the model states (its adapter's
    :meth:`~fme._adapters.ModelAdapter.training_levels`: scikit-learn encoders' ``categories_``,
    HistGradientBoosting's categorical features, LightGBM's and XGBoost's stored categories, a statsmodels
    formula's ``C()`` levels). Such a step would ask the model to extrapolate to a category it cannot
    represent (most encode it as "unknown" and predict silently), so it is refused whatever the
    extrapolation detector (paper §5.1: the categorical ME moves rows to a level of the feature).

    Raises
    ------
    StepError
        Naming the feature, the level and the model's levels.
    """
    for step in steps:
        if step.is_numeric or step.feature not in known:
            continue
        model_levels = list(known[step.feature])
        if not any(same_level(step.value, lv) for lv in model_levels):
            raise StepError(
                f"feature {step.feature!r}: the model never saw the level {step.value!r} when it was fitted (its "
                f"levels are {model_levels[:20]}{' ...' if len(model_levels) > 20 else ''}); "
                "it cannot predict at that level "
                "(an unknown category), so the fME would be meaningless. Step to one of the model's levels, or refit "
                "the model on data that contains it."
            )


def same_level(value: Any, level: Any) -> bool:
    try:
        return bool(value == level)
    except (TypeError, ValueError):
        return False


def set_level(col: pd.Series, level: Any, n: int) -> Any:
    if isinstance(col.dtype, pd.CategoricalDtype):
        code = col.cat.categories.get_loc(level)
        return pd.Categorical.from_codes(np.full(n, code, dtype=np.int64), dtype=col.dtype)
    if pd.api.types.is_bool_dtype(col.dtype):
        return np.full(n, bool(level))
    return pd.array([level] * n, dtype=col.dtype)


def all_float(frame: pd.DataFrame) -> bool:
    return frame.shape[1] > 0 and all(dt == np.float64 for dt in frame.dtypes)


def numeric_shift(step: Step, h: Mapping[str, Any] | None) -> Any:
    if h is not None and step.feature in h:
        return np.asarray(h[step.feature], dtype=float)
    return step.value


def stepped_rows(data: pd.DataFrame, steps: tuple[Step, ...]) -> np.ndarray:
    """True for the rows every step can move: no missing stepped feature, not already at a categorical step's
    level (the rows with an fME)."""
    keep = np.ones(len(data), dtype=bool)
    for st in steps:
        col = data[st.feature]
        keep &= col.notna().to_numpy()
        if not st.is_numeric:
            keep &= (col != st.value).to_numpy()
    return keep


def apply_steps(
    frame: pd.DataFrame,
    steps: tuple[Step, ...],
    h: Mapping[str, Any] | None = None,
    scratch: Scratch | None = None,
) -> pd.DataFrame:
    """Return a new frame with every step applied; ``frame`` is not modified.

    ``h`` optionally maps numeric features to per-row effective steps (used by
    step shrinking); otherwise each step's own value is added. Untouched
    columns keep their dtypes; categorical columns stay categorical.
    ``scratch``: for a frame the caller drops after one ``predict`` call, the
    memory an all-float frame is written into (:mod:`fme._utils.memory`: kept
    from call to call; the caller gives it back once the frame is dropped).
    """
    if all_float(frame) and all(s.is_numeric for s in steps):
        return _moved_float_block(frame, steps, h, scratch)
    out = frame.copy(deep=False)
    n = len(frame)
    for step in steps:
        col = frame[step.feature]
        if step.is_numeric:
            out[step.feature] = col.to_numpy(dtype=float) + numeric_shift(step, h)
        else:
            out[step.feature] = set_level(col, step.value, n)
    return out


def column_shifts(
    frame: pd.DataFrame, steps: tuple[Step, ...], h: Mapping[str, Any] | None, n: int
) -> dict[int, list[np.ndarray]]:
    """The numeric steps' shifts (length ``n``, broadcast from a step's value) by column position, in order."""
    shifts: dict[int, list[np.ndarray]] = {}
    for step in steps:
        j = frame.columns.get_loc(step.feature)
        shifts.setdefault(j, []).append(np.broadcast_to(np.asarray(numeric_shift(step, h), dtype=float), (n,)))
    return shifts


def _moved_float_block(
    frame: pd.DataFrame, steps: tuple[Step, ...], h: Mapping[str, Any] | None, scratch: Scratch | None = None
) -> pd.DataFrame:
    """x + h of an all-float frame as one float block (the model's ``np.asarray(frame)`` is then a view, not a
    copy), in ``scratch``'s memory if given, else fresh: the unmoved columns copied and the moved ones written as
    x + h in one pass each (not copied, then added to), row ranges on several threads (one thread does not fill
    the memory's bandwidth here)."""
    fill, out = _block_fill(frame, steps, h, scratch)
    run_ranges(fill, len(frame), align=8, min_rows=rows_per_thread(frame.shape[1]))
    return pd.DataFrame(out.T, index=frame.index, columns=frame.columns, copy=False)


def _block_fill(
    frame: pd.DataFrame, steps: tuple[Step, ...], h: Mapping[str, Any] | None, scratch: Scratch | None
) -> tuple[Callable[[int, int], None], np.ndarray]:
    """(``fill(lo, hi)``, the block it fills): x + h of rows ``lo:hi`` of the all-float ``frame`` written into the
    block (columns x rows, pandas' own layout), any row range on any thread, each cell the same number."""
    n, p = frame.shape
    base = frame.to_numpy(dtype=float)
    shifts = column_shifts(frame, steps, h, n)
    out = np.empty((p, n)) if scratch is None else scratch.take(p * n).reshape(p, n)

    def fill(lo: int, hi: int) -> None:
        for j in range(p):
            x = base[lo:hi, j]
            if j not in shifts:
                out[j, lo:hi] = x
                continue
            first, *more = shifts[j]
            np.add(x, first[lo:hi], out=out[j, lo:hi])
            for shift in more:
                out[j, lo:hi] += shift[lo:hi]

    return fill, out


def moving(
    frame: pd.DataFrame, steps: tuple[Step, ...], h: Mapping[str, Any] | None = None, scratch: Scratch | None = None
) -> Callable[[], pd.DataFrame]:
    """x + h (:func:`apply_steps`, the same frame) written beside the caller's work: the returned function waits
    for it and returns it, sharing the rows still to write once it is called. For a caller that predicts f(x)
    meanwhile: a large all-float frame is written by a helper thread while the model computes (the writing was a
    fifth of a cheap model's :func:`fme.fme`; benchmarks/README.md, "Eighth pass"). Its source is read from the
    frame's own block, which only pandas' copy-on-write keeps a model writing into its input frame off; without
    it (pandas 2 without the option), for other frames and for small ones, x + h is written here, before the
    caller's work. An error in the writing is raised by the returned function; a caller leaving early calls it
    too, so that nothing writes into ``scratch`` once it is given back."""
    n, p = frame.shape
    if not (
        thread_count() > 1
        and n * p >= 2 * MIN_CELLS_PER_THREAD
        and all_float(frame)
        and all(s.is_numeric for s in steps)
        and copy_on_write()
    ):
        moved = apply_steps(frame, steps, h, scratch)
        return lambda: moved
    fill, out = _block_fill(frame, steps, h, scratch)
    target = [fill]  # the helper's work reaches the block only through this list, emptied once written

    def work(lo: int, hi: int) -> None:
        if target:
            target[0](lo, hi)

    # chunks of a few MB: the caller takes what the helper has not started once its own work is done
    chunk = max(8, rows_per_thread(p) // 4 // 8 * 8)
    finish: Callable[[], None] | None = chunks_beside(work, n, chunk, 1)

    def done() -> pd.DataFrame:
        nonlocal finish
        if finish is not None:
            try:
                finish()
            finally:
                finish = None
                target.clear()
        return pd.DataFrame(out.T, index=frame.index, columns=frame.columns, copy=False)

    return done


def write_path_points(out: np.ndarray, x: np.ndarray, shifts: list[np.ndarray], t: Any) -> None:
    """``out = t h + x`` of one column: ``shifts`` its steps' shifts (the first, then the others added in order),
    sliced as ``x``, at ``t`` (a number, or a column of several t against the rows of ``out``). t h + x is x + t h
    to the bit (addition commutes in IEEE arithmetic), and x is not copied first; a step the same for every row
    (a broadcast shift) gives each t h once, then one pass. Every route that writes path points calls this, so
    that their points are the same numbers."""
    first, *more = shifts
    if first.strides[0] == 0 and first.size:
        np.add(x, t * first[0], out=out)
    else:
        np.multiply(t, first, out=out)
        out += x
    for shift in more:
        out += t * shift


def stack_path(
    frame: pd.DataFrame,
    steps: tuple[Step, ...],
    ts: np.ndarray,
    h: Mapping[str, Any] | None = None,
    buffer: np.ndarray | None = None,
) -> pd.DataFrame:
    """Stack the points ``x + t h`` for every ``t`` in ``ts`` (one block per ``t``).

    Row ``k * n + i`` is observation ``i`` moved by ``ts[k]`` of its step, so a
    whole batch goes to the model in one ``predict`` call (paper §5.4, the path
    gamma(t)). Only numeric steps lie on a path. ``buffer``: a 1-D float array
    of at least ``n_features * len(ts) * n`` values to build an all-float stack
    in (reused across batches, so fresh memory is not paged in for every batch);
    the returned frame then shares it.
    """
    n = len(frame)
    ts = np.asarray(ts, dtype=float)
    if all_float(frame):
        # Built (features, nodes, rows) in C order: each write is contiguous and the DataFrame wraps it without a
        # copy (pandas keeps blocks as columns x rows); row ranges on several threads, as for x + h.
        base_t = frame.to_numpy(dtype=float).T
        shape = (frame.shape[1], ts.size, n)
        size = shape[0] * shape[1] * shape[2]
        arr = buffer[:size].reshape(shape) if buffer is not None and buffer.size >= size else np.empty(shape)
        shifts = column_shifts(frame, steps, h, n)

        def fill(lo: int, hi: int) -> None:
            for j in range(shape[0]):
                out, x = arr[j, :, lo:hi], base_t[j, None, lo:hi]
                if j not in shifts:
                    out[:] = x
                    continue
                write_path_points(out, x, [s[lo:hi] for s in shifts[j]], ts[:, None])

        run_ranges(fill, n, align=8, min_rows=rows_per_thread(size // max(1, n)))
        return pd.DataFrame(arr.reshape(frame.shape[1], ts.size * n).T, columns=frame.columns, copy=False)
    out = frame.take(np.tile(np.arange(n), ts.size))
    out.index = pd.RangeIndex(out.shape[0])
    for step in steps:
        x = frame[step.feature].to_numpy(dtype=float)
        shift = np.broadcast_to(numeric_shift(step, h), (n,))
        out[step.feature] = (x[None, :] + ts[:, None] * shift[None, :]).ravel()
    return out


#: The keys of a step of ``categorical='classic'`` given as a dict: the reference level and the level compared with it.
CLASSIC_KEYS = ("reference", "level")


def check_classic_keys(feature: str, value: Mapping[str, Any]) -> None:
    """A classic step given as a dict names only :data:`CLASSIC_KEYS` (StepError otherwise)."""
    unknown = [k for k in value if k not in CLASSIC_KEYS]
    if unknown:
        raise StepError(
            f"the classic step of {feature!r} has unknown key(s) {unknown}; use "
            f"{{'reference': <level>, 'level': <level>}} (either may be left out)."
        )


def classic_contrast(feature: str, value: Any, known: Sequence[Any]) -> tuple[Any, list[Any]]:
    """(the reference level, the levels compared with it) of a classic categorical step (paper Eq.
    categorical_me: every row set to the reference, then to each level), ``known`` the feature's levels.

    A step means the same as in the observation-wise ME: ``level`` (a scalar) is "switch to that level",
    compared with the reference, the first level; ``None`` every other level against the first. The reference
    is named by its own key: ``{"reference": r}`` (every other level against ``r``) or
    ``{"reference": r, "level": c}`` (``c`` against ``r``).

    Raises
    ------
    StepError
        An unknown key, a value that is not a level, or a level compared with itself.
    """
    reference = target = None
    if isinstance(value, Mapping):
        check_classic_keys(feature, value)
        reference, target = value.get("reference"), value.get("level")
    else:
        target = value

    def match(v: Any, what: str) -> Any:
        found = [lv for lv in known if same_level(v, lv)]
        if not found:
            raise StepError(
                f"{v!r} ({what}) is not a level of the categorical feature {feature!r}; use one of {list(known)[:20]}."
            )
        return found[0]

    ref = known[0] if reference is None else match(reference, "the reference")
    if target is None:
        return ref, [lv for lv in known if not same_level(lv, ref)]
    level = match(target, "the level")
    if same_level(level, ref):
        raise StepError(
            f"the classic step of {feature!r} compares {level!r} with itself (it is the reference, the "
            f"first level unless named); name another level, or the reference: "
            f"{{{feature!r}: {{'reference': <level>, 'level': {level!r}}}}}."
        )
    return ref, [level]
