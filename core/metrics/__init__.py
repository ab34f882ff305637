"""Metric math, one module per family plus `common` (shared rates) (SPEC §5, docs/METRICS.md).

Modules take the items / RunData frames described in docs/ARCHITECTURE.md and return dicts of
core.schema.Rate (nested dicts allowed); they never read the store.
"""
