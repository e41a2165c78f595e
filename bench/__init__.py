"""Ratio benchmarks of runjournal against baselines measured in the same run (``python -m bench``)."""
