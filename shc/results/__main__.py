"""``python -m shc.results --preset NAME --markdown`` (:mod:`shc.results.cli`)."""

from shc.results.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
