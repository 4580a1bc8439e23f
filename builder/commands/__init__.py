"""Bodies of CLI commands that are more than a call into the pipeline (`cli.py` parses and dispatches)."""
