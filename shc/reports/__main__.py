"""``python -m shc.reports``: the report batch (:mod:`shc.reports.cli`)."""

from shc.reports.cli import main

if __name__ == "__main__":  # importing the module (pkgutil.walk_packages, pydoc) must not start a build
    raise SystemExit(main())
