"""The importers' public entry: items (JSONL or zip), predictions (JSONL or CSV) and labels (JSONL), SPEC §3,
and other tools' files through db/foreign.py.

Every import validates the whole file and writes nothing when any line is bad; the write itself is one
`BEGIN IMMEDIATE` transaction, so a killed import leaves no partial rows. Re-importing the same file changes
nothing. The code sits in one module per concern, each calling the shared helpers of db/import_common.py:
db/import_items.py, db/import_predictions.py (the one path of predictions of every format,
`import_prediction_lines`) and db/import_labels.py.
"""

from __future__ import annotations

from db.import_common import ImportResult, check_image_bytes
from db.import_items import import_items, read_items, validate_items_file
from db.import_labels import import_labels
from db.import_predictions import import_prediction_lines, import_predictions

__all__ = ["ImportResult", "check_image_bytes", "import_items", "import_labels", "import_prediction_lines",
           "import_predictions", "read_items", "validate_items_file"]
