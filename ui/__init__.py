"""Gradio UI: one module per tab (`build_<tab>(ctx)`), shared render helpers; no SQL and no metric math."""
