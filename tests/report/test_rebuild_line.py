"""The report's Rebuild line does not depend on the path the config was given through, nor on the working
directory: a build through './reports/x.yaml', 'x.yaml' or an absolute path prints the same line."""

from __future__ import annotations

import pytest

from fme.report.present.context import rebuild_command


@pytest.mark.parametrize(
    "arg", ["x.yaml", "reports/x.yaml", "./reports/x.yaml", "/home/a/reports/x.yaml", "..\\reports\\x.yaml"]
)
def test_the_rebuild_line_names_the_config_file_only(arg):
    assert rebuild_command({"config_name": "x"}, {"config_arg": arg}) == "fme report x.yaml --force"


def test_without_a_recorded_argument_the_config_name_is_used():
    assert rebuild_command({"config_name": "boston-svm"}, {}) == "fme report boston-svm.yaml --force"
