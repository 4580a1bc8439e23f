// What a model server on the visitor's computer says about itself (its context window, its models), and
// whether the browser let this page reach it. The same endpoints as builder/local_server.py:
// llama-server's GET /props (default_generation_settings.n_ctx), vLLM's and LM Studio's model lists
// (max_model_len, loaded_context_length), Ollama's POST /api/show (num_ctx, else its default 4096) and
// GET /api/tags; llama-cpp-python tells no window, so the visitor gives it in the settings.

const OLLAMA_DEFAULT_CONTEXT = 4096;
const PROBE_TIMEOUT_MS = 3000;
const LOOPBACK = /^(localhost|127(\.\d+){3}|\[::1\])$/;
/** A server's JSON, whatever it holds: read through ?. and checks, never trusted to have a shape. @typedef {any} ServerJson */

const PRIVATE = /^(10(\.\d+){3}|192\.168(\.\d+){2}|172\.(1[6-9]|2\d|3[01])(\.\d+){2}|169\.254(\.\d+){2}|[^.]+\.local)$/;

/** "loopback", "local" (a private network address) or "public", from the URL's host name alone.
 * @param {string} url @returns {"loopback" | "local" | "public"} */
export function addressSpace(url) {
  const host = new URL(url).hostname;
  if (LOOPBACK.test(host)) return "loopback";
  return PRIVATE.test(host) ? "local" : "public";
}

/** @param {string} url @param {object} [body] POSTed as JSON @returns {Promise<ServerJson>} null when it fails */
async function getJson(url, body = undefined) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), PROBE_TIMEOUT_MS);
  try {
    const init = body === undefined ? {} : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } };
    const response = await fetch(url, { ...init, signal: controller.signal, credentials: "omit", cache: "no-store" });
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

const positive = (/** @type {unknown} */ value) => (typeof value === "number" && Number.isInteger(value) && value > 0 ? value : null);

/** @param {ServerJson} data @param {string} model */
function fromModelList(data, model) {
  /** @type {ServerJson[]} */
  const entries = Array.isArray(data?.data) ? data.data.filter((/** @type {ServerJson} */ e) => e && typeof e === "object") : [];
  const chosen = entries.filter((e) => e.id === model);
  for (const entry of chosen.length ? chosen : entries.length === 1 ? entries : []) {
    const found = positive(entry.max_model_len) || positive(entry.loaded_context_length) || positive(entry.max_context_length);
    if (found) return found;
  }
  return null;
}

/** @param {ServerJson} data */
function fromOllamaShow(data) {
  if (!data || typeof data.model_info !== "object") return null;
  const match = /^num_ctx\s+(\d+)/m.exec(String(data.parameters || ""));
  return match ? Number(match[1]) : OLLAMA_DEFAULT_CONTEXT;
}

/**
 * The context window the server reports, with the endpoint that told it, or null.
 * @param {{base_url: string, model: string}} settings
 * @returns {Promise<{tokens: number, source: string} | null>}
 */
export async function contextWindow({ base_url, model }) {
  const base = base_url.replace(/\/+$/, "");
  const root = new URL(base).origin;
  /** @type {Array<{source: string, ask: () => Promise<ServerJson>, read: (data: ServerJson) => number | null}>} */
  const probes = [
    { source: "/props", ask: () => getJson(`${root}/props`), read: (d) => positive(d?.default_generation_settings?.n_ctx) },
    { source: `${base.slice(root.length)}/models`, ask: () => getJson(`${base}/models`), read: (d) => fromModelList(d, model) },
    { source: "/api/v0/models", ask: () => getJson(`${root}/api/v0/models`), read: (d) => fromModelList(d, model) },
    { source: "/api/show", ask: () => getJson(`${root}/api/show`, { model }), read: fromOllamaShow },
  ];
  for (const { source, ask, read } of probes) {
    const tokens = read(await ask());
    if (tokens) return { tokens, source };
  }
  return null;
}

/** The models the server lists at /v1/models, or Ollama's at /api/tags; [] when it lists none.
 * @param {string} baseUrl @returns {Promise<string[]>} */
export async function modelNames(baseUrl) {
  const base = baseUrl.replace(/\/+$/, "");
  const listed = await getJson(`${base}/models`);
  if (Array.isArray(listed?.data)) return listed.data.map((/** @type {ServerJson} */ e) => String(e?.id || "")).filter(Boolean);
  const tags = await getJson(`${new URL(base).origin}/api/tags`);
  if (Array.isArray(tags?.models)) return tags.models.map((/** @type {ServerJson} */ m) => String(m?.name || "")).filter(Boolean);
  return [];
}

/**
 * After a failed call to `url`: whether the browser's Local Network Access permission for that address
 * space was refused (Chromium asks before a public page may call this computer or the local network; a
 * page that is itself on this computer is never asked, and its state stays "prompt").
 * @param {string} url
 */
export async function localAccessDenied(url) {
  const space = addressSpace(url);
  if (space === "public" || !navigator.permissions) return false;
  for (const name of [space === "loopback" ? "loopback-network" : "local-network", "local-network-access"]) {
    try {
      const status = await navigator.permissions.query(/** @type {PermissionDescriptor} names newer than tsc's */ ({ name }));
      return status.state === "denied";
    } catch {
      // this browser does not know the name: try the next, older one
    }
  }
  return false;
}

const RANK = { public: 0, local: 1, loopback: 2 };

/** Whether the browser asks the visitor before this page may call `space`: only for a space more private
 * than the page's own (a page on this computer is never asked about it). @param {"loopback" | "local"} space */
function permissionAsked(space) {
  return RANK[space] > RANK[addressSpace(location.href)];
}

/** Whether anything answers at `origin`: a no-cors GET resolves for any server that answers, whatever its
 * CORS rules, and fails only when nothing listens (or the browser blocks the call). @param {string} origin */
async function answersAt(origin) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), PROBE_TIMEOUT_MS);
  try {
    await fetch(`${origin}/`, { mode: "no-cors", credentials: "omit", cache: "no-store", signal: controller.signal });
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Why a call to a server on this computer or network failed, as far as the page can tell: "denied" (the
 * browser's Local Network Access permission was refused, which only a page from a more public address
 * space is ever asked), "nothing" (nothing answers at that port), "refused" (a server answers there but
 * turned this page's call away: its CORS settings), or null for a public URL, whose causes look alike.
 * @param {string} url @returns {Promise<"denied" | "nothing" | "refused" | null>}
 */
export async function whyUnreachable(url) {
  const space = addressSpace(url);
  if (space === "public") return null;
  if (permissionAsked(space) && (await localAccessDenied(url))) return "denied";
  return (await answersAt(new URL(url).origin)) ? "refused" : "nothing";
}

/** What the visitor is told when nothing answers at `url`'s port. @param {string} url */
export function nothingListening(url) {
  const { origin, port, protocol, hostname } = new URL(url);
  const where = addressSpace(url) === "loopback" ? "this computer" : hostname;
  const number = port || (protocol === "https:" ? "443" : "80");
  return `Nothing is listening at ${origin}: no server answers on port ${number} of ${where}. Start the model server (for Ollama, \`ollama serve\`), or correct the port in the base URL.`;
}

export const LOCAL_ACCESS_HELP =
  "Your browser asks before a site on the internet may reach a server on your computer or network " +
  "(“Local network access”), and this site was not allowed: click the icon at the left of the address bar, " +
  "allow Local network access for this site, then try again.";
