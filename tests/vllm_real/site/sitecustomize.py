"""The oracle harness in every Python process an oracle starts (tests/vllm_real/conftest.py puts
this folder on PYTHONPATH for the session): oracle_harness.py says what it changes."""

import oracle_harness

oracle_harness.install()
