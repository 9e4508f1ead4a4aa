"""``python -m shc``: the ``shc`` command (:mod:`shc.cli`)."""

from shc.cli import main

raise SystemExit(main())
