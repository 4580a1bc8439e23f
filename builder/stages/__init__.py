"""The build stages, and nothing else: fetch → parse → chunk → embed. The embed stage runs the model
through builder/embedding/; each index file's writer is in builder/writers/; what writes the site's files
(store, data files, pages, manifest, runtime, the query encoder from builder/query_encoder/) lives in
`builder/site/`, and no stage imports it."""
