"""Ratio benchmarks of runjournal against baselines measured in the same run (``python -m bench``).

``harness`` holds what every benchmark shares (rows, statistics, the table, the JSON), one module per
benchmark measures (``append``, ``fold``, ``listing``, ...), and ``results_table`` renders the published
figures of ``results.json`` into the README (see docs/performance.md, "Results").
"""
