"""Typed quantities: every number the report shows, with its unit, the rows it counts and its interval.

A :class:`Quantity` is one value with a :class:`Unit` (the scale the reader reads it on: a classifier's
probabilities are shown in percentage points), the :class:`RowSet` it is computed over and, optionally, an
:class:`Interval` that names its kind (delta, bootstrap, fixed model, ...) and level. The analysis stage
writes quantities into ``results.json`` (:meth:`Quantity.to_dict`, documented in
``fme/report/schemas/results.schema.json``), the present stage reads them back (:meth:`Quantity.from_dict`)
and formats them with :func:`shown` and :func:`interval_text` only, so a value, its unit and its interval
read alike in every table, caption and sentence.

This module sits in the lowest stage (``inputs``) because both later stages use it; it computes nothing of
a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..._utils.numfmt import fmt_est, fmt_g, fmt_level, fmt_nlm, fmt_num, fmt_p, fmt_percent, fmt_share
from .wording import count_words, unit_after

__all__ = [
    "Unit",
    "RowSet",
    "Interval",
    "Quantity",
    "UNITLESS",
    "COUNT",
    "shown",
    "written",
    "written_bounds",
    "written_se",
    "FORMS",
    "interval_text",
    "difference",
    "percentage_points",
    "model_units",
    "ROUNDING_LEVEL",
    "at_rounding_level",
    "fixed_bounds",
]

#: A standard error at or below this share of the magnitude of what it is the error of is rounding noise:
#: a statistic divided by it (7.3e16 for an SE of 6.7e-18) is not a statistic.
ROUNDING_LEVEL = 1e-10


@dataclass(frozen=True)
class Unit:
    """The unit a value is read in.

    Parameters
    ----------
    name : str
        As the reader reads it, in the plural ('percentage points', 'thousands of dollars'); '' for a
        scale-free number (an NLM, a p-value).
    short : str
        For table headers ('pp'); defaults to ``name``.
    scale : float
        What a value on the model's own scale is multiplied by to be read in this unit (100 for a probability
        read in percentage points, else 1).
    of : str
        What the unit measures ('P(vote = Dole)'), for captions; may be ''.
    """

    name: str
    short: str = ""
    scale: float = 1.0
    of: str = ""

    @property
    def header(self) -> str:
        """The unit in a table header: ' (pp)', or '' for a scale-free number."""
        s = self.short or self.name
        return f" ({s})" if s else ""

    def after(self, amount: Any) -> str:
        """The unit as it reads after ``amount`` ('1 percentage point', '2.4 percentage points')."""
        return unit_after(self.name, amount)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "short": self.short, "scale": self.scale, "of": self.of}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Unit:
        return cls(
            name=d.get("name", ""), short=d.get("short", ""), scale=float(d.get("scale", 1.0)), of=d.get("of", "")
        )


#: A number without a unit (NLM, p-value, statistic).
UNITLESS = Unit("")
#: A count of rows (its noun is the row set's).
COUNT = Unit("")


def percentage_points(of: str = "") -> Unit:
    """A class probability read in percentage points."""
    return Unit("percentage points", "pp", 100.0, of)


def model_units(name: str, of: str = "") -> Unit:
    """A prediction read on the model's own scale, in the config's ``target_unit`` (may be '')."""
    return Unit(name or "", name or "", 1.0, of)


@dataclass(frozen=True)
class RowSet:
    """The rows a number is over.

    Parameters
    ----------
    name : str
        Plural noun phrase ('evaluated rows', 'extrapolation points', 'rows of the seeded sample').
    n : int
        How many.
    of : RowSet, optional
        The set these rows were drawn from or are part of: a share or a count "k of n" may only name a set
        of its own lineage (no sample count over a whole-data total).
    """

    name: str
    n: int
    of: RowSet | None = None

    def words(self) -> str:
        """'1,500 evaluated rows', '1 extrapolation point'."""
        return count_words(self.n, self.name)

    def lineage(self) -> list[RowSet]:
        """This set and every set it is part of, innermost first."""
        out, cur = [], self
        while cur is not None:
            out.append(cur)
            cur = cur.of
        return out

    def within(self, other: RowSet) -> bool:
        """Whether ``other`` is this set or one it was drawn from (counts of one lineage)."""
        return any(r.name == other.name and r.n == other.n for r in self.lineage())

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "n": int(self.n), "of": None if self.of is None else self.of.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> RowSet | None:
        if d is None:
            return None
        return cls(name=d["name"], n=int(d["n"]), of=cls.from_dict(d.get("of")))


@dataclass(frozen=True)
class Interval:
    """A confidence interval and what it is.

    Parameters
    ----------
    low, high : float or None
        On the model's scale (the quantity's unit scales them for display); None: not computed.
    level : float
        0.95.
    kind : str
        'delta', 'delta (Pearson dispersion 13.49)', 'bootstrap', 'fixed model', 'learner', 'data'.
    covers : str
        What uncertainty it covers ('model uncertainty', 'the rows' spread given the fitted model').
    """

    low: float | None
    high: float | None
    level: float
    kind: str
    covers: str = ""

    @property
    def computed(self) -> bool:
        return self.low is not None and self.high is not None

    def excludes_zero(self) -> int:
        """+1 when the interval lies above 0, -1 below, 0 when it contains 0 or was not computed."""
        if not self.computed:
            return 0
        return 1 if self.low > 0 else (-1 if self.high < 0 else 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "low": _finite(self.low),
            "high": _finite(self.high),
            "level": self.level,
            "kind": self.kind,
            "covers": self.covers,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Interval | None:
        if d is None:
            return None
        return cls(
            low=d.get("low"), high=d.get("high"), level=float(d["level"]), kind=d["kind"], covers=d.get("covers", "")
        )


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Quantity:
    """One number the report shows.

    Parameters
    ----------
    id : str
        Unique within ``results.json`` ('crim-1/ame'); claims cite it.
    label : str
        What it is ('AME of crim + 1', 'difference leaf 3 - leaf 2').
    value : float or None
        On the model's scale; :func:`shown` applies the unit's scale.
    unit : Unit
    rows : RowSet
    interval : Interval, optional
    std_error : float, optional
        On the model's scale.
    form : str
        How the value is written (:data:`FORMS`, :func:`written`): 'estimate' (the default: the decimals of
        its interval), 'nlm', 'p', 'share' (``rows.n`` of ``rows.of.n``), 'percent', 'fixed:<decimals>',
        'g:<significant digits>' (a data range), 'gt:<significant digits>' (the same with thousands separators).
    """

    id: str
    label: str
    value: float | None
    unit: Unit
    rows: RowSet
    interval: Interval | None = None
    std_error: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    form: str = "estimate"

    def display(self) -> tuple[float | None, float | None, float | None]:
        """(value, low, high) in the unit the reader reads (the unit's scale applied)."""
        s = self.unit.scale
        iv = self.interval
        scaled = lambda x: None if x is None else float(x) * s  # noqa: E731
        return scaled(self.value), scaled(iv.low if iv else None), scaled(iv.high if iv else None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "value": _finite(self.value),
            "unit": self.unit.to_dict(),
            "rows": self.rows.to_dict(),
            "interval": None if self.interval is None else self.interval.to_dict(),
            "std_error": _finite(self.std_error),
        } | ({} if self.form == "estimate" else {"form": self.form})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Quantity:
        return cls(
            id=d["id"],
            label=d.get("label", ""),
            value=d.get("value"),
            unit=Unit.from_dict(d["unit"]),
            rows=RowSet.from_dict(d["rows"]),
            interval=Interval.from_dict(d.get("interval")),
            std_error=d.get("std_error"),
            form=d.get("form", "estimate"),
        )


def shown(q: Quantity, *, unit: bool = False) -> str:
    """The value as a table cell prints it: rounded to about 2 significant figures of its interval's half-width
    (same decimals as the bounds); with ``unit``, followed by the unit in the number it takes."""
    v, lo, hi = q.display()
    text = fmt_est(v, lo, hi)[0]
    if unit and q.unit.name:
        text += " " + q.unit.after(text)
    return text


#: The forms a quantity's value is written in, each as one formatter of :mod:`fme._utils.numfmt` (the number
#: after ':' is its parameter); 'signed' is a difference written with its sign and fixed decimals ('+0.0').
FORMS = ("estimate", "nlm", "p", "share", "percent", "fixed", "g", "gt", "signed")


def written(q: Quantity) -> str:
    """The value as the report writes it, in the quantity's unit and :attr:`Quantity.form`: '2.039'
    (estimate), '0.9881' (nlm), '< 0.001' (p), '14.0%' (share of rows), '0.850' (fixed:3), '9.09959' (g:6),
    '1,680.5' (gt:6)."""
    kind, _, arg = q.form.partition(":")
    v, lo, hi = q.display()
    if kind == "estimate":
        return fmt_est(v, lo, hi)[0]
    if kind == "nlm":
        return fmt_nlm(v, lo, hi)[0]
    if kind == "p":
        return fmt_p(v)
    if kind == "share":
        return fmt_share(q.rows.n, q.rows.of.n if q.rows.of is not None else 0)
    if kind == "percent":
        return fmt_percent(q.value, int(arg or 1))
    if kind == "fixed":
        return fmt_num(v, int(arg or 3))
    if kind in ("g", "gt"):  # 'gt': with thousands separators
        return fmt_g(v, int(arg or 6), thousands=kind == "gt") if v is not None else "-"
    if kind == "signed":  # a difference of shares in percentage points, as fmt_percent(sign=True) writes it
        return "-" if v is None else format(v, f"+.{int(arg or 1)}f")
    raise ValueError(f"unknown form {q.form!r} of quantity {q.id}: one of {', '.join(FORMS)}")


def written_bounds(q: Quantity) -> tuple[str, str]:
    """The interval's bounds as the report writes them, with the value's decimals ('estimate'), as an NLM
    ('nlm') or with the fixed decimals of a 'fixed:<decimals>' value (two builds' AMEs side by side in the
    change log); ('-', '-') without an interval."""
    v, lo, hi = q.display()
    kind, _, arg = q.form.partition(":")
    if kind == "fixed":
        return fmt_num(lo, int(arg or 3)), fmt_num(hi, int(arg or 3))
    triple = fmt_nlm(v, lo, hi) if q.form == "nlm" else fmt_est(v, lo, hi)
    return triple[1], triple[2]


def written_se(q: Quantity) -> str:
    """The standard error as an interval table prints it beside the interval: in the decimals of the interval
    (:func:`fme._utils.numfmt.fmt_est` of the SE and the bounds, so a rounding-level SE reads '1.6e-16', not
    '0.000000'); '-' without one."""
    if q.std_error is None:
        return "-"
    _, lo, hi = q.display()
    return fmt_est(float(q.std_error) * q.unit.scale, lo, hi)[0]


def interval_text(q: Quantity, *, brackets: bool = True) -> str:
    """'[1.1, 3.7]' (tables) or '95% CI 1.1 to 3.7, delta' (sentences); '-' / 'no interval' without one."""
    v, lo, hi = q.display()
    if q.interval is None or lo is None or hi is None:
        return "-" if brackets else "no interval"
    _, a, b = fmt_est(v, lo, hi)
    if brackets:
        return f"[{a}, {b}]"
    return f"{fmt_level(q.interval.level)} CI {a} to {b}, {q.interval.kind}"


def at_rounding_level(std_error: float | None, magnitude: float) -> bool:
    """Whether a standard error is rounding noise next to ``magnitude`` (the size of what it is the error of):
    zero, negative, missing or at most :data:`ROUNDING_LEVEL` of it."""
    if std_error is None or not math.isfinite(float(std_error)) or float(std_error) <= 0:
        return True
    return float(std_error) <= ROUNDING_LEVEL * max(abs(float(magnitude)), 1e-300)


def difference(
    a: Quantity,
    b: Quantity,
    *,
    id: str,
    label: str,
    value: float | None,
    interval: Interval | None = None,
    std_error: float | None = None,
    rows: RowSet | None = None,
) -> Quantity:
    """The quantity ``a - b`` (computed elsewhere: paired, with its own interval) in the unit of its operands,
    which must share one: a difference of two values in percentage points is in percentage points, so a
    difference table cannot drift to another scale than its operands."""
    if a.unit != b.unit:
        raise ValueError(
            f"cannot subtract {b.label} ({b.unit.name or 'no unit'}) from {a.label} "
            f"({a.unit.name or 'no unit'}): the units differ"
        )
    return Quantity(
        id=id, label=label, value=value, unit=a.unit, rows=rows or a.rows, interval=interval, std_error=std_error
    )


def fixed_bounds(v: dict[str, Any]) -> tuple[float | None, float | None]:
    """(low, high) of an effect variant's fixed-model interval as ``results.json`` keeps it: the labelled
    ``fixed_interval``, or the unlabelled ``ci_low``/``ci_high`` of a results.json written before it."""
    iv = v.get("fixed_interval")
    if iv is not None:
        return iv.get("low"), iv.get("high")
    return v.get("ci_low"), v.get("ci_high")
