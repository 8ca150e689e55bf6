// signingFetch is a fetch that signs every request it sends as the
// server's signed routes ask (RFC 9421, Ed25519): ("@method" "@path"
// "@authority" "content-digest") with created, keyid, nonce and alg, and
// a Content-Digest of the body. keyid is a did:key or a registered
// principal's key id; seedBase64 the base64 of its 32-byte Ed25519 seed.
// It uses nothing but Node's standard library, so the MCP and A2A tests'
// clients share it.
import { createHash, createPrivateKey, randomUUID, sign } from 'node:crypto';

export function signingFetch(keyid, seedBase64) {
  const key = createPrivateKey({ format: 'der', type: 'pkcs8', // PKCS#8 wrapping of the raw seed
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seedBase64, 'base64')]) });
  return async (input, init = {}) => {
    const u = new URL(input instanceof Request ? input.url : input);
    const method = (init.method ?? 'GET').toUpperCase();
    const body = typeof init.body === 'string' ? init.body : '';
    const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
    const params = `("@method" "@path" "@authority" "content-digest");created=${Math.floor(Date.now() / 1000)};keyid="${keyid}";nonce="${randomUUID()}";alg="ed25519"`;
    const signatureBase = `"@method": ${method}\n"@path": ${u.pathname}\n"@authority": ${u.host}\n"content-digest": ${digest}\n"@signature-params": ${params}`;
    const headers = new Headers(init.headers);
    headers.set('Content-Digest', digest);
    headers.set('Signature-Input', `sig1=${params}`);
    headers.set('Signature', `sig1=:${sign(null, Buffer.from(signatureBase), key).toString('base64')}:`);
    return fetch(u, { ...init, headers });
  };
}
