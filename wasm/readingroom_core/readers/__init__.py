"""The readers of the site's file families, one module per family, named as its format
(`readingroom_core/formats/<family>.py`) and its writer (`builder/writers/<family>.py`) are.

What is read by range goes through `ranges.BlockReader`, every block checked against the checksum its
directory holds; what a visit keeps decoded between queries is bounded (`lru.Recent`).
"""
