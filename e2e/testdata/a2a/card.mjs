// Fetches assay serve's A2A Agent Card with the official @a2a-js/sdk,
// verifies its signature with the SDK's verifier (JWS over the card's
// RFC 8785 form) against the key its kid names, which must be a key the
// court publishes at /.well-known/assay-keys, then runs a dispute as an
// A2A task through the SDK's JSON-RPC client: the task's artifact is the
// signed verdict receipt. Exits non-zero on the first failure.
//
// usage: node card.mjs BASE CONTRACT_ID BUYER_DID_KEY BUYER_SEED_BASE64
// The caller has created, funded and delivered CONTRACT_ID on a signed
// court whose buyer is BUYER_DID_KEY; every A2A request is signed by it
// (RFC 9421), and the same dispute unsigned is refused.
import { randomUUID } from 'node:crypto';
import { signingFetch as signer } from '../httpsig.mjs';
import { AGENT_CARD_PATH, verifyAgentCardSignature, Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import * as jose from 'jose';

const [base, contractID, buyer, seed] = process.argv.slice(2);

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}

// The card, as the SDK's resolver fetches it from the well-known path,
// and as it was sent. The signature is checked on the card as sent: the
// SDK's verifier canonicalizes through its proto-JSON reader, which in
// this version drops securitySchemes from a card the resolver has
// already turned into its in-memory form, so only the wire form verifies.
const card = await new DefaultAgentCardResolver().resolve(base);
const sent = await (await fetch(new URL(AGENT_CARD_PATH, base))).json();
check(sent.name === card.name && sent.skills.length === card.skills.length, 'the resolver read another card');
check(card.name === 'Assay' && card.version, `card ${JSON.stringify(card).slice(0, 200)}`);
const skills = Object.fromEntries(card.skills.map((s) => [s.id, s]));
for (const id of ['escrow-court', 'judgment-matters', 'artifact-market', 'checker-replays']) check(skills[id], `no skill ${id}`);
check(skills['escrow-court'].tags.includes('dispute_delivery'), `court skill tags ${skills['escrow-court'].tags}`);
const iface = card.supportedInterfaces[0];
check(iface.protocolBinding === 'JSONRPC' && iface.protocolVersion === '1.0' && iface.url.endsWith('/a2a'), `interface ${JSON.stringify(iface)}`);
check(sent.securitySchemes.apiKey.httpAuthSecurityScheme.scheme === 'Bearer' && sent.securitySchemes.httpSignature, `schemes ${JSON.stringify(sent.securitySchemes)}`);

// The signature: the key comes from the JWKS the header's jku names, and
// must be the court's published key of the same did.
const published = (await (await fetch(new URL('/.well-known/assay-keys', base))).json()).keys;
let usedKid;
const verify = verifyAgentCardSignature(async (kid, jku) => {
  check(jku, 'the protected header names no jku');
  const jwks = await (await fetch(jku)).json();
  const jwk = jwks.keys.find((k) => k.kid === kid);
  check(jwk, `kid ${kid} is not in ${jku}`);
  const court = published.find((k) => k.did === kid);
  check(court && Buffer.from(court.public_key, 'base64').equals(Buffer.from(jwk.x, 'base64url')), `kid ${kid} is not a key of /.well-known/assay-keys`);
  usedKid = kid;
  return jose.importJWK(jwk, 'EdDSA');
});
await verify(sent);
check(usedKid && usedKid.startsWith('did:key:'), `kid ${usedKid}`);
let forgedVerifies = true;
try {
  await verify({ ...sent, description: sent.description + ' (forged)' });
} catch {
  forgedVerifies = false;
}
check(!forgedVerifies, 'a changed card still verifies');


async function clientWith(fetchImpl) {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(fetchImpl ? { fetchImpl } : {})],
  }));
  return factory.createFromAgentCard(card);
}

const dispute = (messageId) => ({
  message: {
    messageId, role: Role.ROLE_USER,
    parts: [{ content: { $case: 'data', value: { contract_id: contractID, reason: 'five rows, not a hundred' } }, mediaType: 'application/json' }],
  },
});

// Unsigned, the court refuses: a rejected task carrying the coded error.
const anonymous = await clientWith();
const refused = await anonymous.sendMessage(dispute(`anon-${randomUUID()}`));
check(refused.status.state === TaskState.TASK_STATE_REJECTED, `an unsigned dispute: ${JSON.stringify(refused.status)}`);
const why = JSON.stringify(refused.status.message?.parts?.[0]?.content?.value);
check(why.includes('signature_missing') || why.includes('agent_mismatch'), `refusal ${why}`);

// Signed by the buyer: completed, the verdict receipt its artifact.
const client = await clientWith(signer(buyer, seed));
const messageId = `dispute-${randomUUID()}`;
const task = await client.sendMessage(dispute(messageId));
check(task.status.state === TaskState.TASK_STATE_COMPLETED, `task state ${task.status.state}: ${JSON.stringify(task).slice(0, 400)}`);
const rc = task.artifacts[0].parts[0].content.value;
check(rc.credentialSubject.verdict === 'refund' && rc.credentialSubject.contract_id === contractID, `receipt ${JSON.stringify(rc.credentialSubject)}`);
const valid = await (await fetch(new URL('/verify', base), { method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ receipt: rc }) })).json();
check(valid.valid === true, `the artifact does not verify: ${JSON.stringify(valid)}`);

// The same message again is the same task; GetTask reads it back.
const again = await client.sendMessage(dispute(messageId));
check(again.id === task.id && again.artifacts[0].artifactId === task.artifacts[0].artifactId, 'a retried message made another task');
const got = await client.getTask({ id: task.id });
check(got.status.state === TaskState.TASK_STATE_COMPLETED && got.artifacts[0].artifactId === rc.id, `GetTask ${JSON.stringify(got).slice(0, 300)}`);

console.log(`ok: card of ${card.skills.length} skills verified with ${usedKid}; dispute ${task.id} completed, artifact ${rc.id} (verdict ${rc.credentialSubject.verdict})`);
