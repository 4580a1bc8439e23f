"""Test-only harness: generated PDFs, the loopback arXiv, chromium launch settings, the Pyodide driver."""
