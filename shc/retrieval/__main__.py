"""``python -m shc.retrieval export|import ...`` (the same commands as ``shc export`` / ``shc import``)."""

from shc.retrieval.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
