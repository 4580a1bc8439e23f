"""The site's files, one module per family: its layout, its version constants and its codec (stdlib only).

Each family's writer (`builder/writers/<family>.py`, in the build) and its reader
(`readingroom_core/readers/<family>.py`, in the core) import the same module here, so the two cannot
drift apart: `versioned` (FORMAT_VERSION, gzip), `manifest`, `chunks` (the chunk table), `papers`,
`texts`, `postings` (dictionary and pages), `forward`, `dense`, `wordpieces` and `hnsw` (the USearch file
beside the site, for other tools). A family whose codec is all there is to it (the manifest, the chunk
table, the papers file) has its records' `to_json`/`from_json` here and no module of its own elsewhere.
"""
