import sys

from shc.reports.cli import main

sys.exit(main())
