"""The one-file report (`app.py report`, the Metrics tab's "Download report"): one HTML file that opens from
file:// with no network request and holds the whole analysis of a benchmark's runs (docs/UI.md, "The one-file
report").

- collect.py gathers it: provenance, the Metrics tab's page (ui.metrics_page.metrics_page: the same scores, tables
  and charts as the screen) and the groups with every run's answer and trace;
- page.py writes it: inline styles, plotly.js once, the viewer (report.js), JSON islands, thumbnails;
- write.py is the one entry point (`write_report`, `report_html`: cli.commands.cmd_report, the Metrics tab).

`report`'s options are in cli/arguments.py. This package's own module imports nothing, so the CLI's parser reads
`GROUP_CHOICES` without loading gradio, plotly or the store.
"""

GROUP_CHOICES = "failing, all, or a number of groups"
