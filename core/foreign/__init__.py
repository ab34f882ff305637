"""Readers for the files other tools write (VLMEvalKit, lmms-eval, Hugging Face datasets): docs/FORMATS.md.

Pure: rows (already read from their files by db/foreign.py) in, Crosscheck item / prediction objects and
issues out. Each reader turns a row into the same object an items-JSONL or predictions-JSONL line would be,
so core.formats decides it by the same rules and every guarantee of the JSONL import holds.
"""
