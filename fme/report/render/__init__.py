"""Stage 3 of a report: the display strings -> ``report.qmd`` (Jinja) -> HTML and PDF (pandoc and typst, or
Quarto), and ``model_card.json`` from a built report. Formats and never computes."""

from .documents import (
    RENDERERS,
    TEMPLATES,
    attr_escape,
    html_env,
    markdown_env,
    md_escape,
    pandoc_path,
    render_documents,
    render_html,
    render_pdf,
    render_qmd,
    tool_versions,
)
from .model_card import model_card, write_model_card

__all__ = [
    "RENDERERS",
    "TEMPLATES",
    "attr_escape",
    "html_env",
    "markdown_env",
    "md_escape",
    "pandoc_path",
    "render_documents",
    "render_html",
    "render_pdf",
    "render_qmd",
    "tool_versions",
    "model_card",
    "write_model_card",
]
