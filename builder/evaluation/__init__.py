"""Retrieval quality over built sites: the dev-question metrics (`evaluate`, `metrics`) and BEIR (`beir`)."""
