// A client of Assay's judgment matters that signs every request as RFC 9421
// HTTP Message Signatures with Ed25519, using nothing but Node's standard
// library (Node 18 or later).
//
//   node client.mjs keygen KEY_ID FILE     make a key: FILE gets the private
//                                          seed (mode 0600); stdout the
//                                          public part, for assay principals add
//   node client.mjs FILE METHOD URL [BODY] send a signed request as FILE's key;
//                                          BODY is JSON text, @PATH or - (stdin)
//
// A request prints the response body on stdout; a status of 400 or more also
// prints the status on stderr and exits 1.
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

// The DER prefixes that wrap a raw 32-byte Ed25519 seed (PKCS#8) and public
// key (SPKI).
const pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');
const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');

function keygen(keyID, file) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(pkcs8Prefix.length);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(spkiPrefix.length);
  const key = { key_id: keyID, public_key: pub.toString('base64') };
  writeFileSync(file, JSON.stringify({ ...key, seed: seed.toString('base64') }) + '\n', { mode: 0o600 });
  console.log(JSON.stringify(key));
}

// signedHeaders signs method, url and body: the signature covers @method,
// @path, @authority and content-digest (RFC 9530's SHA-256 of the body,
// empty for a GET), with created, keyid, a fresh nonce and alg.
export function signedHeaders(key, method, url, body) {
  const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
  const params = `("@method" "@path" "@authority" "content-digest")` +
    `;created=${Math.floor(Date.now() / 1000)};keyid="${key.key_id}";nonce="${randomUUID()}";alg="ed25519"`;
  const base = [
    `"@method": ${method.toUpperCase()}`,
    `"@path": ${url.pathname}`,
    `"@authority": ${url.host}`,
    `"content-digest": ${digest}`,
    `"@signature-params": ${params}`,
  ].join('\n');
  const priv = createPrivateKey({ format: 'der', type: 'pkcs8',
    key: Buffer.concat([pkcs8Prefix, Buffer.from(key.seed, 'base64')]) });
  const signature = sign(null, Buffer.from(base), priv).toString('base64');
  return { 'Content-Digest': digest, 'Signature-Input': `sig1=${params}`, 'Signature': `sig1=:${signature}:` };
}

async function request(file, method, target, arg) {
  const key = JSON.parse(readFileSync(file, 'utf8'));
  let body = '';
  if (arg === '-') body = readFileSync(0, 'utf8');
  else if (arg?.startsWith('@')) body = readFileSync(arg.slice(1), 'utf8');
  else if (arg !== undefined) body = arg;
  const url = new URL(target);
  const headers = signedHeaders(key, method, url, body);
  if (body !== '') headers['Content-Type'] = 'application/json';
  const res = await fetch(url, { method, headers, body: body === '' ? undefined : body });
  const text = await res.text();
  process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  if (res.status >= 400) {
    console.error(`${method} ${url.pathname}: HTTP ${res.status}`);
    process.exitCode = 1;
  }
}

const args = process.argv.slice(2);
if (args[0] === 'keygen' && args.length === 3) {
  keygen(args[1], args[2]);
} else if (args.length === 3 || args.length === 4) {
  await request(...args);
} else {
  console.error('usage: node client.mjs keygen KEY_ID FILE\n       node client.mjs FILE METHOD URL [BODY | @PATH | -]');
  process.exitCode = 2;
}
