"""The build stages, one module each: fetch → parse → chunk → embed → index/postings → store/manifest → render."""
