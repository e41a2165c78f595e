"""The commands ``runjournal`` hands to the server package, with their one-line help.

Data only, read by both command lines: the client's ``cli.py`` hands these
words over whole (the server may not be installed), and the server's
``cli.py`` lists them in its help. Neither command line imports the other.
"""

from __future__ import annotations

SERVER_COMMANDS: dict[str, str] = {
    "serve": "run the gRPC journal server",
    "migrate": "copy runs and tasks from one store to another, byte for byte (file, jetstream)",
    "dev-nats": "run a local nats-server set up for the jetstream backend (for experiments)",
}
"""The commands the server package runs, with their one-line help (shown by ``runjournal --help`` either way)."""
