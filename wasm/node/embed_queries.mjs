// Embeds token ids with ONNX Runtime Web under Node, the way encoder.js does in the browser: the wasm
// build (ort.wasm.min.mjs), one thread, weights dequantised at load. One JSON request on stdin, one
// JSON reply on stdout.
//
//   node wasm/node/embed_queries.mjs --model query_encoder.onnx
//     < {"ids": [[101, 2054, 102], ...], "codes": [[...], ...], "scales": [[...], ...]}
//   -> {"vectors": [[...], ...], "run_ms": [...], "load_ms": 123.4}
// codes and scales: each query's word-piece rows (readingroom_core.readers.wordpieces), as the search worker
// hands them to encoder.js.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = (relative) => fileURLToPath(new URL(relative, import.meta.url));

async function readStdin() {
  const parts = [];
  for await (const part of process.stdin) parts.push(part);
  return Buffer.concat(parts).toString("utf8");
}

const { values } = parseArgs({ options: { model: { type: "string" } } });
const ort = await import(here("../node_modules/onnxruntime-web/dist/ort.wasm.min.mjs"));
ort.env.wasm.numThreads = 1;
const request = JSON.parse(await readStdin());
const model = await readFile(values.model);
const started = performance.now();
const session = await ort.InferenceSession.create(new Uint8Array(model.buffer, model.byteOffset, model.byteLength), {
  executionProviders: ["wasm"],
  extra: { session: { disable_quant_qdq: "1" } }, // as encoder.js (builder/query_encoder/at_query_time.py DEQUANTIZE_AT_LOAD)
});
const loadMs = performance.now() - started;
const vectors = [];
const runMs = [];
for (const [index, ids] of request.ids.entries()) {
  const shape = [1, ids.length];
  const codes = Int8Array.from(request.codes[index]);
  const feeds = {
    input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), shape),
    attention_mask: new ort.Tensor("int64", new BigInt64Array(ids.length).fill(1n), shape),
    word_piece_codes: new ort.Tensor("int8", codes, [1, ids.length, codes.length / ids.length]),
    word_piece_scales: new ort.Tensor("float32", Float32Array.from(request.scales[index]), shape),
  };
  const runStarted = performance.now();
  const outputs = await session.run(feeds);
  runMs.push(performance.now() - runStarted);
  vectors.push(Array.from(outputs[session.outputNames[0]].data));
}
process.stdout.write(JSON.stringify({ vectors, run_ms: runMs, load_ms: loadMs }));
