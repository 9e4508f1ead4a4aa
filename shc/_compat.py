"""Compatibility import of torchvision (the only place ``shc`` imports it).

Why this exists: the torchvision wheels on PyPI are CUDA builds. Paired with a
CPU-only torch (as installed here through ``constraints.txt``), torchvision's
compiled extension ``torchvision._C`` fails to load silently, and then
``torchvision/_meta_registrations.py`` calls
``torch.library.register_fake("torchvision::nms")`` for an operator that was
never defined, so ``import torchvision`` dies with
``RuntimeError: operator torchvision::nms does not exist``.

``import_torchvision()`` tries the plain import first. Only when that exact
failure happens does it define the *schemas* of the two operators that are
registered unconditionally (``nms`` and ``qnms``, with torchvision's own
signatures) and import again. Models, weights and transforms then work; the
compiled ops themselves (``torchvision.ops.nms``, ``roi_align``, ...) stay
unavailable on such a setup and raise when called. ``shc`` never calls them.
"""

from __future__ import annotations

import importlib
import sys
import types

_MISSING_OP_MESSAGE = "operator torchvision::nms does not exist"
_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_library = None  # keeps the schema registrations alive for the process
patched = False  #: True when the schemas had to be registered (CPU torch + CUDA torchvision)


def _drop_partial_import() -> None:
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]


def _register_missing_schemas() -> None:
    global _library, patched
    import torch

    _library = torch.library.Library("torchvision", "DEF")  # noqa: TOR901 (kept alive on purpose)
    for name, schema in _SCHEMAS.items():
        try:
            torch._C._dispatch_find_schema_or_throw(f"torchvision::{name}", "")
        except RuntimeError:
            _library.define(schema)
    patched = True


def import_torchvision() -> types.ModuleType:
    """Import and return ``torchvision``, repairing the CPU-torch/CUDA-torchvision mismatch.

    Raises the original error for any other import failure.
    """
    if "torchvision" in sys.modules and hasattr(sys.modules["torchvision"], "models"):
        return sys.modules["torchvision"]
    try:
        return importlib.import_module("torchvision")
    except RuntimeError as error:
        if _MISSING_OP_MESSAGE not in str(error):
            raise
    _drop_partial_import()
    _register_missing_schemas()
    return importlib.import_module("torchvision")


torchvision = import_torchvision()

__all__ = ["import_torchvision", "patched", "torchvision"]
