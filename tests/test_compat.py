"""The torchvision compatibility import (shc._compat)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import shc._compat as compat


def test_torchvision_imports_and_builds_models():
    torchvision = compat.import_torchvision()
    model = torchvision.models.resnet18(weights=None)
    assert sum(p.numel() for p in model.parameters()) == 11_689_512  # ResNet-18's published size


def test_fresh_interpreter_import_reports_whether_it_patched():
    code = (
        "import torch, importlib\n"
        "try:\n    importlib.import_module('torchvision'); plain = True\n"
        "except RuntimeError as e:\n    plain = False; assert 'torchvision::nms' in str(e)\n"
        "import sys\nfor m in [m for m in sys.modules if m.startswith('torchvision')]: del sys.modules[m]\n"
        "import shc._compat as c\nassert c.patched == (not plain), (c.patched, plain)\n"
        "from torchvision import transforms; print('ok', c.patched)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_other_import_errors_are_not_swallowed(monkeypatch):
    def broken(name):
        raise RuntimeError("some other failure")

    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    monkeypatch.setattr(compat.importlib, "import_module", broken)
    with pytest.raises(RuntimeError, match="some other failure"):
        compat.import_torchvision()
