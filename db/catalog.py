"""What the UI's pickers list, as one short fingerprint: it changes exactly when a benchmark, a run (its name,
status, or whether it holds predictions yet), a judge run or a calibration sample is added or changes.

The UI keeps the fingerprint it last showed and re-reads its pickers when a fresh one differs (after an
import, a live run's start or end, a drawn sample), so nothing polls the store's contents.
"""

from __future__ import annotations

import hashlib

from db import predictions
from db.store import Store


def catalog_signature(store: Store) -> str:
    """A hex digest of the benchmarks, runs and calibration samples the pickers offer."""
    conn = store.conn
    parts: list[str] = []
    with store.snapshot():  # one state of the store
        for name, n_items in conn.execute("SELECT name, n_items FROM benchmarks ORDER BY id"):
            parts.append(f"b:{name}:{n_items}")
        holding = predictions.runs_holding(store)
        for run_id, name, status in conn.execute("SELECT id, name, status FROM runs ORDER BY id"):
            parts.append(f"r:{name}:{status}:{int(run_id in holding)}")
        for name, n in conn.execute("SELECT name, COUNT(*) FROM calibration_samples GROUP BY name ORDER BY name"):
            parts.append(f"s:{name}:{n}")
    return hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()
