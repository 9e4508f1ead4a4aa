"""``python -m shc``: the ``shc`` command (:mod:`shc.cli`)."""

from shc.cli import main

if __name__ == "__main__":  # importing the module (pkgutil.walk_packages, pydoc) must not run the command
    raise SystemExit(main())
