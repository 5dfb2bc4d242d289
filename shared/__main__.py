"""`python -m shared`: the command line."""

from shared.cli import main

raise SystemExit(main())
