"""``python -m runjournal``: the ``runjournal`` command."""

from runjournal.cli import main

raise SystemExit(main())
