"""Generated from proto/runjournal/v1 by scripts/generate.py. Do not edit."""
