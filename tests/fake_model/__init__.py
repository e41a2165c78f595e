"""A fake model API on a loopback port, for the SDK adapters' tests: the real SDKs are pointed at it with
``base_url``, so nothing reaches a real model API or the internet."""
