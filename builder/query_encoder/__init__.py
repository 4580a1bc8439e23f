"""The query encoder the site ships: the model traced to ONNX (`onnx_graph`), quantised to int8 with
its word-piece table in a file of its own (`quantize`), the char-class table the stdlib tokenizer
replays (`char_classes`), all exported together (`export`) once per model and quantisation
(`cache`), and run at query time by the CLI exactly as the browser runs it (`at_query_time`).

What the rest of builder/ uses is named here; the modules import each other directly.
"""

from builder.query_encoder.at_query_time import DEQUANTIZE_AT_LOAD, OnnxQueryEncoder
from builder.query_encoder.cache import cached_query_encoder
from builder.query_encoder.export import export_query_encoder

__all__ = [
    "DEQUANTIZE_AT_LOAD",
    "OnnxQueryEncoder",
    "cached_query_encoder",
    "export_query_encoder",
]
