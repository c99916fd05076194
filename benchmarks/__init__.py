"""Caerus benchmarks: one script per benchmark (`--quick`, `--json PATH`), plus the regression runner."""
