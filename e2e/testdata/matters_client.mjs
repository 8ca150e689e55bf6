// Open a judgment Matter with an RFC 9421 signed request, using nothing but
// Node's standard library (Node >= 18).
// usage: node matters_client.mjs BASE KEY_ID SEED_BASE64 BODY_JSON
import { createHash, createPrivateKey, sign, randomUUID } from 'node:crypto';
const [base, keyid, seed, body] = process.argv.slice(2);
const url = new URL('/api/v1/economic/matters/open', base);
const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
const params = `("@method" "@path" "@authority" "content-digest");created=${Math.floor(Date.now() / 1000)};keyid="${keyid}";nonce="${randomUUID()}";alg="ed25519"`;
const signatureBase = `"@method": POST\n"@path": ${url.pathname}\n"@authority": ${url.host}\n"content-digest": ${digest}\n"@signature-params": ${params}`;
const key = createPrivateKey({ format: 'der', type: 'pkcs8',   // PKCS#8 wrapping of the raw 32-byte Ed25519 seed
  key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seed, 'base64')]) });
const signature = sign(null, Buffer.from(signatureBase), key).toString('base64');
const res = await fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json',
  'Content-Digest': digest, 'Signature-Input': `sig1=${params}`, 'Signature': `sig1=:${signature}:` } });
console.log(res.status, await res.text());
