"""The vLLM releases dsv4-launch knows: one table, pure data, no imports.

- ``VERIFIED_RELEASES``: the releases whose own code the real-vLLM oracle suite (tests/vllm_real)
  has been run against (tools/oracle_sweep.py; docs/release-matrix.md) and whose option table is
  recorded (``data/serve-options-X.json``; tests/releases/test_vllm_releases.py holds the two equal). The
  plugin patches only these; every rule row is judged on them as its evidence says.
- ``NEWEST_VERIFIED``: the last of them. On a newer release (``0.35.0``, ``0.34.1``, ``0.35.0rc1``)
  no refusal rests on code nobody has read: ``core/rules/engine.evaluate`` turns each refusal of a
  row whose condition is release code into a warning that says "verified up to …".
- ``CI_RELEASES``: the releases CI installs and runs the oracle suite on (``.ci/run`` reads them from
  here: the upstream report's version, the last that crashes on ``auto``, the newest).

The per-release vLLM facts are ``facts.py``'s; a new release: docs/releases.md.

This module is read by ``.ci/run`` with ``runpy`` (no package import): keep it free of imports.
"""

VERIFIED_RELEASES: tuple[str, ...] = (
    "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0",
    "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0",
)
NEWEST_VERIFIED: str = VERIFIED_RELEASES[-1]
CI_RELEASES: tuple[str, ...] = ("0.24.0", "0.29.0", "0.34.0")
