"""Adapters between runjournal and the SDKs agent workers already run.

Each module needs its provider's SDK, installed as an extra (``runjournal[anthropic]``,
``runjournal[openai]``, ``runjournal[claude-agent-sdk]``, ``runjournal[openai-agents]``);
the base client never imports them.
"""
