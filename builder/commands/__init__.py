"""Each CLI command's body, by family; `builder/cli.py` parses the command line and dispatches here."""
