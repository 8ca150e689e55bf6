// An independent verifier of Assay's transparency log, written from the
// C2SP specifications (signed-note, tlog-checkpoint, tlog-tiles) and RFC
// 6962 with Node's standard library only: it shares no code with the
// server. It fetches the checkpoint and checks the log key's Ed25519
// signature, fetches every entry bundle and level-0 tile, recomputes the
// tree's root from the entries, checks each receipt's entry at the index
// the server gives (Assay-Log-Index) and its RFC 6962 audit path, and
// that an earlier checkpoint is a prefix of this tree.
//
// usage: node verify.mjs BASE VKEY < {"receipts": [ids], "earlier": "<checkpoint note>"}
import { createHash, createPublicKey, verify } from "node:crypto";

const [base, vkey] = process.argv.slice(2);
const input = JSON.parse(await new Promise((ok) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d)).on("end", () => ok(s));
}));

const sha256 = (...parts) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};
const leafHash = (e) => sha256(Buffer.from([0]), e);
const nodeHash = (l, r) => sha256(Buffer.from([1]), l, r);
const fail = (msg) => {
  console.error("verify.mjs: " + msg);
  process.exit(1);
};

// signed-note: verify the log's signature on a checkpoint note.
function openNote(text) {
  const i = vkey.indexOf("+"), j = vkey.indexOf("+", i + 1);
  const [name, hash, key64] = [vkey.slice(0, i), vkey.slice(i + 1, j), vkey.slice(j + 1)];
  const key = Buffer.from(key64, "base64");
  if (key[0] !== 1 || key.length !== 33) fail("not an Ed25519 verifier key");
  const id = sha256(Buffer.from(name + "\n"), key).subarray(0, 4);
  if (id.toString("hex") !== hash) fail("the key hash does not match");
  const pub = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: key.subarray(1).toString("base64url") }, format: "jwk" });
  const split = text.lastIndexOf("\n\n");
  const body = text.slice(0, split + 1);
  let ok = false;
  for (const line of text.slice(split + 2).split("\n")) {
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const sig = Buffer.from(m[2], "base64");
    if (!sig.subarray(0, 4).equals(id)) continue;
    ok = ok || verify(null, Buffer.from(body), pub, sig.subarray(4));
  }
  if (!ok) fail("no valid signature of the log's key on the checkpoint");
  const [origin, size, root] = body.split("\n");
  if (origin !== name) fail(`origin ${origin} is not the key's name ${name}`);
  return { size: Number(size), root: Buffer.from(root, "base64") };
}

// tlog-tiles: the path of tile N, full or of width w.
function tileIndex(n) {
  let s = String(n % 1000).padStart(3, "0");
  for (n = Math.floor(n / 1000); n > 0; n = Math.floor(n / 1000)) s = "x" + String(n % 1000).padStart(3, "0") + "/" + s;
  return s;
}
async function get(path) {
  const res = await fetch(base + path);
  if (res.status !== 200) fail(`GET ${path}: ${res.status}`);
  return res;
}

// RFC 6962 2.1: the Merkle Tree Hash of leaf hashes, and an audit path.
function mth(h) {
  if (h.length === 1) return h[0];
  let k = 1;
  while (k * 2 < h.length) k *= 2;
  return nodeHash(mth(h.slice(0, k)), mth(h.slice(k)));
}
function path(m, h) {
  if (h.length === 1) return [];
  let k = 1;
  while (k * 2 < h.length) k *= 2;
  return m < k ? [...path(m, h.slice(0, k)), mth(h.slice(k))] : [...path(m - k, h.slice(k)), mth(h.slice(0, k))];
}
// RFC 9162 2.1.3.2: the root an audit path leads to.
function rootFromPath(index, size, leaf, proof) {
  let fn = index, sn = size - 1, r = leaf;
  for (const p of proof) {
    if (sn === 0) fail("audit path too long");
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) { fn >>= 1; sn >>= 1; }
    } else r = nodeHash(r, p);
    fn >>= 1; sn >>= 1;
  }
  if (sn !== 0) fail("audit path too short");
  return r;
}

const cp = openNote(await (await get("/log/checkpoint")).text());
const entries = [];
const leaves = [];
for (let n = 0; n * 256 < cp.size; n++) {
  const w = Math.min(256, cp.size - n * 256);
  const suffix = w === 256 ? "" : `.p/${w}`;
  const bundle = Buffer.from(await (await get(`/log/tile/entries/${tileIndex(n)}${suffix}`)).arrayBuffer());
  for (let off = 0; off < bundle.length; ) {
    const len = bundle.readUInt16BE(off);
    entries.push(bundle.subarray(off + 2, off + 2 + len));
    off += 2 + len;
  }
  const tile = Buffer.from(await (await get(`/log/tile/0/${tileIndex(n)}${suffix}`)).arrayBuffer());
  for (let i = 0; i < w; i++) {
    const h = leafHash(entries[n * 256 + i]);
    if (!tile.subarray(i * 32, i * 32 + 32).equals(h)) fail(`tile 0/${n} hash ${i} is not its entry's`);
    leaves.push(h);
  }
}
if (entries.length !== cp.size) fail(`${entries.length} entries for a tree of ${cp.size}`);
if (cp.size > 0 && !mth(leaves).equals(cp.root)) fail("the entries do not hash to the checkpoint's root");

let checked = 0;
for (const id of input.receipts) {
  const res = await get(`/receipts/${id}`);
  const index = Number(res.headers.get("assay-log-index"));
  const r = await res.json();
  const issued = r.issuanceDate;
  const want = ["assay-receipt/v1", `id ${r.id.replace("urn:assay:receipt:", "")}`, `kind ${r.type[1]}`, `issued ${issued}`,
    `subject ${r.proof.subjectHash}`, `key ${r.proof.publicKey}`, `signature ${r.proof.signature}`].join("\n") + "\n";
  const got = entries[index]?.toString();
  if (!got || !(got === want || got.startsWith(want + "supersedes "))) fail(`receipt ${id}: entry ${index} is ${JSON.stringify(got)}`);
  if (!rootFromPath(index, cp.size, leaves[index], path(index, leaves)).equals(cp.root)) fail(`receipt ${id}: the audit path does not lead to the root`);
  checked++;
}
if (input.earlier) {
  const old = openNote(input.earlier);
  if (old.size > cp.size || (old.size > 0 && !mth(leaves.slice(0, old.size)).equals(old.root))) fail(`the checkpoint of size ${old.size} is not a prefix of this tree`);
}
console.log(JSON.stringify({ ok: true, size: cp.size, receipts: checked }));
