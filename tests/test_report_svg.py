"""fme.report.analysis._svg: compacted matplotlib SVGs draw the same picture in fewer bytes."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from fme.report.analysis._svg import compact_svg

SVG_NS = "{http://www.w3.org/2000/svg}"


def _figure_svg(tmp_path: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fme.report.analysis.figures import RC, _t

    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 10, 400), rng.normal(0, 1, 400)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
        ax.scatter(x, y, s=14, facecolors="none", edgecolors="#0072B2", linewidths=0.9, label="fME")
        ax.plot(x, np.zeros_like(x), "|", color="#6E6E6E", alpha=0.6, transform=ax.get_xaxis_transform())
        ax.axhline(float(y.mean()), color="#B35300", linestyle="--")
        ax.set_title(_t("fMEs of <b>a</b> & 'b' + 1 [$]"))
        ax.legend()
        fig.savefig(tmp_path / "f.svg", format="svg", metadata={"Date": None})
        plt.close(fig)
    return (tmp_path / "f.svg").read_text(encoding="utf-8")


def _uses(svg: str) -> list[tuple[str, float, float]]:
    root = ET.fromstring(svg.encode("utf-8"))
    out = []
    for u in root.iter(f"{SVG_NS}use"):
        href = u.get("{http://www.w3.org/1999/xlink}href")
        out.append((href, float(u.get("x", 0)), float(u.get("y", 0))))
    return out


def test_same_elements_rounded_coordinates_fewer_bytes(tmp_path):
    raw = _figure_svg(tmp_path)
    small = compact_svg(raw)
    assert compact_svg(raw) == small  # deterministic
    assert len(small) < 0.7 * len(raw)
    before, after = _uses(raw), _uses(small)  # valid XML, every marker and glyph still drawn, in order
    assert [u[0] for u in after] == [u[0] for u in before] and len(after) > 800
    np.testing.assert_allclose([u[1:] for u in after], [u[1:] for u in before], rtol=0, atol=0.005 + 1e-9)
    assert "<metadata>" not in small and "<!--" not in small
    assert compact_svg(small) == small  # idempotent


def test_markers_share_one_group_and_style():
    one = '<g clip-path="url(#p1)"><use xlink:href="#m" x="{}" y="1" style="fill: none; stroke: #000"/></g>'
    other = '<g clip-path="url(#p2)"><use xlink:href="#m" x="9" y="9" style="stroke: #fff"/></g>'
    text = "<svg>" + one.format(1) + one.format(2.123456) + other + one.format(3) + "</svg>"
    assert compact_svg(text) == (
        '<svg><g clip-path="url(#p1)" style="fill: none; stroke: #000"><use xlink:href="#m" x="1" y="1"/>'
        '<use xlink:href="#m" x="2.12" y="1"/></g>'
        '<g clip-path="url(#p2)" style="stroke: #fff"><use xlink:href="#m" x="9" y="9"/></g>'
        '<g clip-path="url(#p1)" style="fill: none; stroke: #000"><use xlink:href="#m" x="3" y="1"/></g></svg>')
    mixed = ('<svg><g><use xlink:href="#m" x="1" y="1" style="stroke: #000"/>'
             '<use xlink:href="#m" x="2" y="1" style="stroke: #fff"/></g></svg>')
    assert compact_svg(mixed) == mixed  # different styles stay on their elements


def test_rasterised_pictures_agree(tmp_path):
    """Rendered by typst (the PDF's renderer) at 150 ppi, the two SVGs differ only where a 0.005 pt
    rounding moves an anti-aliased edge across a pixel boundary."""
    typst = pytest.importorskip("typst")
    from PIL import Image

    raw = _figure_svg(tmp_path)
    (tmp_path / "small.svg").write_text(compact_svg(raw), encoding="utf-8")

    def raster(name: str) -> np.ndarray:
        typ = tmp_path / f"{name}.typ"
        typ.write_text(f'#set page(width: 8in, height: auto, margin: 0pt)\n#image("{name}", width: 100%)\n')
        png = typst.compile(str(typ), format="png", ppi=150)
        return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=int)

    a, b = raster("f.svg"), raster("small.svg")
    assert a.shape == b.shape and (a < 128).mean() > 0.01  # something dark was drawn
    diff = np.abs(a - b)
    assert diff.mean() < 0.25 and (diff > 32).mean() < 0.002, (diff.mean(), (diff > 32).mean())
    assert not re.search(r"\d\.\d{3,}", " ".join(re.findall(r' (?:x|y|d)="[^"]*"', compact_svg(raw))))
