"""Shared test support: record builders, hypothesis strategies, random journals, and environment checks."""
