"""fme.report.present.sentences: the report's sentences say what the numbers are."""

from __future__ import annotations


def test_one_extrapolation_point_is_singular():
    from fme.report.present.sentences import extrapolation_phrase

    v = {"detector": "envelope", "policy": "keep", "n_extrapolation": 0}
    one = extrapolation_phrase(v, {"n": "10", "n_flagged": "1"}, "rows")
    assert "of which 1 is an extrapolation point (envelope detector)" in one
    assert "of which 2 are extrapolation points" in extrapolation_phrase(v, {"n": "10", "n_flagged": "2"}, "rows")
