"""The query encoder's export kept in the build's cache: it takes a while and depends only on the
model's weights and the quantisation, so one folder per (weights, format, quantisation) serves every
build of that model, and a new format or quantisation re-exports instead of reusing the old files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from builder.query_encoder.export import CONFIG_FORMAT, EncoderFiles, export_query_encoder
from builder.query_encoder.quantize import QUANTIZATION
from builder.scratch import copy_made, make_folder_atomically, record_made


def cached_query_encoder(model_dir: Path, weights_sha256: str, cache_dir: Path) -> EncoderFiles:
    """The export of the model in `model_dir` (whose weights hash to `weights_sha256`), made once under
    <cache>/encoder/."""
    quantization = hashlib.sha256(json.dumps(QUANTIZATION, sort_keys=True).encode()).hexdigest()[:8]
    folder = cache_dir / "encoder" / f"{weights_sha256[:20]}-{CONFIG_FORMAT.replace('/', '-')}-{quantization}"
    files = EncoderFiles.in_folder(folder)
    made = ("query encoder", str(Path(model_dir).resolve()), folder.name)
    exported: list[Path] = []

    def fill(scratch: Path) -> None:
        if not copy_made(made, [scratch / path.name for path in files.all()]):
            export_query_encoder(model_dir, scratch)
            exported.append(scratch)

    make_folder_atomically(
        folder,
        complete=lambda candidate: all((candidate / path.name).is_file() for path in files.all()),
        fill=fill,
    )
    if exported:  # a later build with another cache copies these
        record_made(made, files.all())
    return files
