"""The matrix's shared builds: one :class:`~tests.report.matrix.builds.Matrix` per session, each config built once."""

from __future__ import annotations

import pytest

from .builds import Matrix


@pytest.fixture(scope="session")
def matrix(tmp_path_factory):
    m = Matrix(tmp_path_factory.mktemp("matrix"))
    yield m
    m.close()
