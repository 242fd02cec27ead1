"""Runtime tests use the `definitions` and `run_def` fixtures of tests/conftest.py."""
