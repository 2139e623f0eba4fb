"""Arrays of the Python array API standard (NumPy, CuPy, PyTorch, ``array_api_strict``, ...), recognised and
moved to the host through ``array-api-compat``.

fme's bookkeeping runs on NumPy on the host; an array route (:mod:`fme._local.arrays`) keeps the data and the
stepped points where the caller's array lives (a GPU) and brings back only the model's predictions, through
:func:`to_host`. ``array_api_compat`` is imported on first use, so that ``import fme`` stays light.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["is_array", "namespace", "device_of", "library_name", "to_host"]


def is_array(obj: Any) -> bool:
    """True for an array of the array API standard (a NumPy ndarray included), False for pandas objects, Dask
    collections with partitions (a Dask DataFrame) and anything else."""
    if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)) or hasattr(obj, "npartitions"):
        return False
    if isinstance(obj, np.ndarray):
        return True
    if not hasattr(obj, "__array_namespace__") and not hasattr(obj, "__dlpack__"):
        return False  # neither an array API object nor a DLPack producer: no need to load array_api_compat
    import array_api_compat

    return bool(array_api_compat.is_array_api_obj(obj))


def namespace(*arrays: Any) -> Any:
    """The array API namespace of ``arrays`` (``array_api_compat.array_namespace``: NumPy and PyTorch get the
    compatible wrappers, libraries that follow the standard their own namespace)."""
    import array_api_compat

    return array_api_compat.array_namespace(*arrays)


def device_of(array: Any) -> Any:
    """The device ``array`` lives on (``array_api_compat.device``; ``'cpu'`` for NumPy)."""
    import array_api_compat

    return array_api_compat.device(array)


def library_name(array: Any) -> str:
    """The name of the library an array belongs to, for messages (``numpy``, ``torch``, ``cupy``, ...)."""
    name = str(getattr(namespace(array), "__name__", "an array library"))
    return name.removeprefix("array_api_compat.")


def to_host(array: Any) -> np.ndarray:
    """``array`` as a NumPy array on the host: NumPy arrays as they are, CPU arrays without a copy where the
    library exports DLPack, device arrays copied to the host (DLPack with ``device='cpu'``, else the library's
    own ``.cpu()`` / ``.get()``)."""
    if isinstance(array, np.ndarray):
        return array
    if isinstance(array, (int, float, list, tuple)):
        return np.asarray(array)
    if hasattr(array, "detach"):  # autograd tensors refuse DLPack export while they require grad
        array = array.detach()
    try:
        return np.from_dlpack(array)
    except (BufferError, RuntimeError, TypeError, ValueError, AttributeError):
        pass
    try:
        return np.from_dlpack(array, device="cpu", copy=True)
    except (BufferError, RuntimeError, TypeError, ValueError, AttributeError):
        pass
    for method in ("cpu", "get"):
        move = getattr(array, method, None)
        if callable(move):
            array = move()
            break
    to_numpy = getattr(array, "numpy", None)
    return np.asarray(to_numpy() if callable(to_numpy) else array)
