"""The build stages, and nothing else: fetch → parse → chunk → embed → index → encoder export → render.
What writes the site's files (store, data files, manifest, runtime) lives in `builder/site/`."""
