"""The `roofline` command: a thin typer app, one module per command group."""
