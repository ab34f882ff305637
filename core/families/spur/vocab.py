"""SPUR (001) vocabulary, defined once: the seven tasks and the three stages they fall in (§2.1, Figure 3)."""

from __future__ import annotations

# §2.1: Panel-Level Fine-Grained Perception, Cross-Panel Relation Understanding, Expert-Level Reasoning.
STAGES = {
    "perception": ("NP", "MP", "IL"),
    "understanding": ("TA", "HI"),
    "reasoning": ("Qual", "Quant"),
}
TASKS = tuple(task for tasks in STAGES.values() for task in tasks)
STAGE_OF = {task: stage for stage, tasks in STAGES.items() for task in tasks}

# the table of the text-only shortcut filter, which its Metrics control redraws per filter model (001 §2.3)
SHORTCUT_TABLE = "spur_shortcut"

__all__ = ["SHORTCUT_TABLE", "STAGES", "STAGE_OF", "TASKS"]
