// Counts the tokens of chat prompts with real tokenizers: OpenAI's o200k (GPT-4o) and cl100k (GPT-4)
// through gpt-tokenizer's chat encoding, and Llama 2's SentencePiece vocabulary (llama-tokenizer-js)
// over its chat template. Reads [{system, messages: [{role, content}]}] as JSON on stdin and writes
// [{o200k, cl100k, llama2}] as JSON on stdout. Used by tests/test_answers.py (it lives here so Node resolves wasm/node_modules).
import { readFileSync } from "node:fs";
import { encodeChat as encodeO200k } from "gpt-tokenizer/encoding/o200k_base";
import { encodeChat as encodeCl100k } from "gpt-tokenizer/encoding/cl100k_base";
import llamaTokenizer from "llama-tokenizer-js";

function llama2Template({ system, messages }) {
  let text = "";
  let pendingSystem = `<<SYS>>\n${system}\n<</SYS>>\n\n`;
  for (const message of messages) {
    if (message.role === "user") {
      text += `<s>[INST] ${pendingSystem}${message.content} [/INST]`;
      pendingSystem = "";
    } else {
      text += ` ${message.content} </s>`;
    }
  }
  return text;
}

const prompts = JSON.parse(readFileSync(0, "utf-8"));
const counts = prompts.map((prompt) => {
  const chat = [{ role: "system", content: prompt.system }, ...prompt.messages];
  return {
    o200k: encodeO200k(chat, "gpt-4o").length,
    cl100k: encodeCl100k(chat, "gpt-4").length,
    llama2: llamaTokenizer.encode(llama2Template(prompt)).length,
  };
});
process.stdout.write(JSON.stringify(counts));
