"""The runjournal server: journals, claims and folds for AI-agent runs."""
