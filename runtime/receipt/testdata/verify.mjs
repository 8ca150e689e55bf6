// Verify an Assay receipt offline with nothing but Node's standard library.
// usage: node verify.mjs RECEIPT.json [COURT_KEY_BASE64]
import { readFileSync } from 'node:fs';
import { createHash, createPublicKey, verify } from 'node:crypto';

// RFC 8785 for values JSON.parse returns: sorted keys, ES6 numbers and strings.
const jcs = (v) => v === null || typeof v !== 'object' ? JSON.stringify(v)
  : Array.isArray(v) ? `[${v.map(jcs)}]`
  : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`)}}`;

let r = JSON.parse(readFileSync(process.argv[2], 'utf8'));
r = r.credentialSubject ? r : r.receipt;                 // bare or {"receipt": …}
const data = Buffer.from(jcs(r.credentialSubject), 'utf8');
const key = createPublicKey({ format: 'der', type: 'spki',
  key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(r.proof.publicKey, 'base64')]) });
const hashOK = createHash('sha256').update(data).digest('hex') === r.proof.subjectHash;
const sigOK = verify(null, data, key, Buffer.from(r.proof.signature, 'base64'));
const keyOK = !process.argv[3] || process.argv[3] === r.proof.publicKey;  // pin the court's key
console.log(JSON.stringify({ valid: hashOK && sigOK && keyOK, hashOK, sigOK, keyOK }));
process.exit(hashOK && sigOK && keyOK ? 0 : 1);
