"""Pure domain code: schemas, families, parsing, metrics, statistics, runners, judge, demo generators.

Nothing here imports gradio, sqlite_utils or plotly (STYLE 1). Heavy backends (torch, transformers,
openai) are imported lazily inside the runner that needs them (STYLE 6).
"""
