"""Everything SQL: schema and migrations, the store API, importers and exporters (STYLE 7)."""
