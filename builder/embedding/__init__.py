"""Embedding documents: the model's identity (`model`), the engines that compute its vectors on the CPU
(`on_cpu`: fp32 ONNX under onnxruntime) and on a CUDA GPU (`on_gpu`: torch in float16) and the choice
between them (`engines`), the sanity check each engine passes when it starts (`sanity`), how texts are
batched for the model (`batches`) and the vector cache (`cache`). The embed stage
(builder/stages/embed.py) runs a build's texts through them.

What the rest of builder/ uses is named here; the modules import each other directly.
"""

from builder.embedding.batches import GROUP, model_batches
from builder.embedding.cache import EmbeddingCache, save_npy, text_key
from builder.embedding.engines import (
    DEVICES,
    EmbedDeviceError,
    choose_engine,
    document_encoder,
    encode,
    group_size,
    load_model,
    nvidia_gpu_here,
)
from builder.embedding.model import (
    DOCUMENT_ENGINE,
    GPU_ENGINE,
    ModelIdentity,
    identify,
    model_shape,
    weights_sha256,
)
from builder.embedding.on_cpu import DOCUMENT_BATCH, DocumentEncoder, document_encoder_path
from builder.embedding.on_gpu import GPU_GROUP, TorchDocumentEncoder
from builder.embedding.sanity import EmbeddingSanityError

__all__ = [
    "DEVICES",
    "DOCUMENT_BATCH",
    "DOCUMENT_ENGINE",
    "GPU_ENGINE",
    "GPU_GROUP",
    "GROUP",
    "DocumentEncoder",
    "EmbedDeviceError",
    "EmbeddingCache",
    "EmbeddingSanityError",
    "ModelIdentity",
    "TorchDocumentEncoder",
    "choose_engine",
    "document_encoder",
    "document_encoder_path",
    "encode",
    "group_size",
    "identify",
    "load_model",
    "model_batches",
    "model_shape",
    "nvidia_gpu_here",
    "save_npy",
    "text_key",
    "weights_sha256",
]
