"""`python -m builder` commands, one module each."""
