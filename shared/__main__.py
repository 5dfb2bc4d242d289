"""`python -m shared`: the command line, or one line saying how to get it when its dependencies are not installed
(a system `python3` outside `.venv`), instead of a traceback."""

import sys

try:
    from shared.cli import main
except ModuleNotFoundError as missing:
    if (missing.name or "shared").partition(".")[0] == "shared":
        raise  # a module of this package is missing: a broken checkout, not a missing install
    print(
        f"python -m shared: its dependencies are not installed for {sys.executable} (no module named "
        f"{missing.name!r}); `make setup` installs them into .venv, then run `.venv/bin/python -m shared ...`",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

raise SystemExit(main())
