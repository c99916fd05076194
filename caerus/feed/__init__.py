"""The feed process: venue loops (decode -> validate -> publish), their outputs and the `caerus feed` CLI."""
