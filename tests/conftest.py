"""Test-session set-up shared by every file.

The README's test command runs one worker process per core (``-n auto --dist loadfile``, pytest-xdist). Each
worker's torch would otherwise start one thread per core too, so two workers on two cores would run four busy
threads; here each worker takes its share of the cores. Tests that plan threads themselves (``--jobs``, the executors) set their own.
"""

from __future__ import annotations

import os


def pytest_configure(config) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
