// Drives every service of assay serve through MCP tools only, with the
// official TypeScript SDK as a stock client would use it: a whole escrow
// court case (create, fund, deliver, dispute, verify), a signed judgment
// Matter to a judged verdict (each HTTP request signed with RFC 9421 by
// the principal acting), and a replay batch (upload a checker, replay it).
// Every structuredContent is validated against its tool's outputSchema,
// by the SDK and again by hand. Exits non-zero on the first failure.
//
// usage: node agents.mjs BASE REVISION CONFIG_JSON
// REVISION 2026-07-28 uses @modelcontextprotocol/client (v2) pinned to
// that stateless revision (server/discover, no initialize); 2025-11-25
// uses @modelcontextprotocol/sdk (v1), whose newest revision it is.
// CONFIG_JSON: {"wasm": path of squares.wasm, "requester": {"id", "seed"},
// "solver": {"id", "seed"}, "tag": a word that makes ids unique}; seeds
// are base64 Ed25519 seeds of principals the caller registered.
import { createHash } from 'node:crypto';
import { signingFetch as signer } from '../httpsig.mjs';
import { readFileSync } from 'node:fs';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const [base, revision, configJSON] = process.argv.slice(2);
const config = JSON.parse(configJSON);
const url = new URL('/mcp', base);

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}


// connect opens a client of the revision under test; fetchImpl, when
// set, carries (and signs) its every HTTP request.
async function connect(fetchImpl) {
  const info = { name: 'assay-agents-e2e', version: '1.0.0' };
  if (revision === '2026-07-28') {
    const client = new ClientV2(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new TransportV2(url, fetchImpl ? { fetch: fetchImpl } : {}));
    return client;
  }
  const client = new ClientV1(info);
  await client.connect(new TransportV1(url, fetchImpl ? { fetch: fetchImpl } : {}));
  return client;
}

const anon = await connect();
const requester = await connect(signer(config.requester.id, config.requester.seed));
const solver = await connect(signer(config.solver.id, config.solver.seed));
if (revision === '2026-07-28') {
  check(anon.getNegotiatedProtocolVersion?.() === undefined || anon.getNegotiatedProtocolVersion() === '2026-07-28',
    `negotiated ${anon.getNegotiatedProtocolVersion?.()}`);
}

// Every tool: a title, the three hints, input and output schemas that
// compile.
const ajv = new AjvJsonSchemaValidator();
const { tools } = await anon.listTools();
const outputs = {};
for (const t of tools) {
  const a = t.annotations ?? {};
  check(t.title && t.description && t.outputSchema, `${t.name}: title, description or outputSchema missing`);
  check(typeof a.readOnlyHint === 'boolean' && typeof a.destructiveHint === 'boolean' && typeof a.idempotentHint === 'boolean',
    `${t.name}: annotations ${JSON.stringify(a)}`);
  ajv.getValidator(t.inputSchema);
  outputs[t.name] = ajv.getValidator(t.outputSchema);
}
for (const n of ['create_contract', 'fund_contract', 'deliver_work', 'dispute_delivery', 'verify_receipt', 'open_matter', 'submit_verdict',
  'upload_checker', 'replay_checker', 'purchase']) {
  check(outputs[n], `no tool ${n} among ${tools.length}`);
}

// call answers a tool's structured content, validated by the SDK and
// again against the tool's outputSchema.
let calls = 0;
async function call(c, name, args) {
  const res = await c.callTool({ name, arguments: args });
  check(!res.isError, `${name}: tool error ${res.content?.[0]?.text}`);
  check(res.structuredContent, `${name}: no structured content`);
  const v = outputs[name](res.structuredContent);
  check(v.valid, `${name}: structuredContent does not fit its outputSchema: ${v.errorMessage}`);
  calls++;
  return res.structuredContent;
}
async function refused(c, name, args) {
  const res = await c.callTool({ name, arguments: args });
  check(res.isError, `${name}: not refused: ${JSON.stringify(res.structuredContent)}`);
  return JSON.parse(res.content[0].text).error.code;
}

// A whole court case: the deliverable has 5 rows where 100 were agreed,
// so the dispute refunds the buyer.
const buyer = `did:nanda:buyer-${config.tag}`;
const seller = `did:nanda:seller-${config.tag}`;
const created = await call(anon, 'create_contract', { buyer, seller, price: 50,
  acceptance: { assertions: [{ path: 'rows', op: 'gte', value: 100 }] }, idempotency_key: `create-${config.tag}` });
const id = created.contract_id;
check(created.status === 'created', `created ${JSON.stringify(created)}`);
check((await call(anon, 'fund_contract', { contract_id: id })).status === 'funded', 'funded');
check((await call(anon, 'deliver_work', { contract_id: id, deliverable: { rows: 5 } })).status === 'delivered', 'delivered');
const verdict = await call(anon, 'dispute_delivery', { contract_id: id, reason: 'five rows, not a hundred', idempotency_key: `dispute-${config.tag}` });
const subject = verdict.credentialSubject;
check(subject.verdict === 'refund' && subject.contract_id === id && verdict.proof.signature, `verdict ${JSON.stringify(subject)}`);
const again = await call(anon, 'dispute_delivery', { contract_id: id, reason: 'five rows, not a hundred', idempotency_key: `dispute-${config.tag}` });
check(again.id === verdict.id, 'a retried dispute answered another receipt');
check((await call(anon, 'verify_receipt', { receipt: verdict })).valid === true, 'the verdict receipt does not verify');
const forged = structuredClone(verdict);
forged.credentialSubject.verdict = 'release';
check((await call(anon, 'verify_receipt', { receipt: forged })).valid === false, 'a forged receipt verifies');
const contract = await call(anon, 'get_contract', { contract_id: id });
check(contract.status === 'resolved' && contract.verdict === 'refund', `contract ${JSON.stringify(contract)}`);
const stored = await call(anon, 'get_receipt', { receipt_id: verdict.id });
check(stored.proof.signature === verdict.proof.signature, 'get_receipt answered another receipt');
const rep = await call(anon, 'agent_reputation', { agent: seller });
check(rep.agent === seller || JSON.stringify(rep).includes(seller), `reputation ${JSON.stringify(rep)}`);
const recs = await call(anon, 'agent_receipts', { agent: buyer, limit: 10 });
check(JSON.stringify(recs).includes(verdict.id), `the buyer's receipts lack the verdict: ${JSON.stringify(recs).slice(0, 300)}`);
check(await refused(anon, 'accept_delivery', { contract_id: id }) === 'invalid_state', 'accepting a resolved contract');

// A signed Matter to a judged verdict: the requester opens and assigns,
// the solver accepts and judges, each through its own signed client.
const digest = createHash('sha256').update(`publish the release notes ${config.tag}`).digest('hex');
check(await refused(anon, 'open_matter', { action_digest: digest, question: 'q', stakes_usdc: '1', deadline: new Date(Date.now() + 3600e3).toISOString(),
  risk_class: 'publish', verdict_schema: { type: 'object' }, idempotency_key: 'anon' }) === 'signature_missing', 'an unsigned open_matter');
const opened = await call(requester, 'open_matter', { action_digest: digest, question: 'publish the release notes?', stakes_usdc: '1',
  deadline: new Date(Date.now() + 3600e3).toISOString(), risk_class: 'publish', idempotency_key: `open-${config.tag}`,
  verdict_schema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } }, additionalProperties: false } });
const mid = opened.matter.matter_id;
check(opened.matter.status === 'open' && opened.receipt.proof.signature, `opened ${JSON.stringify(opened.matter)}`);
await call(requester, 'assign_solver', { matter_id: mid, solver_id: config.solver.id, solver_kind: 'model', conflict_free: true, idempotency_key: `assign-${config.tag}` });
check(await refused(requester, 'accept_assignment', { matter_id: mid, idempotency_key: `steal-${config.tag}` }) !== undefined, 'the requester accepted for the solver');
await call(solver, 'accept_assignment', { matter_id: mid, idempotency_key: `accept-${config.tag}` });
const judged = await call(solver, 'submit_verdict', { matter_id: mid, solver_kind: 'model', action_digest: digest, verdict: { ok: true },
  idempotency_key: `verdict-${config.tag}` });
check(judged.matter.status === 'judged' && judged.receipt.credentialSubject, `judged ${JSON.stringify(judged.matter)}`);
const got = await call(requester, 'get_matter', { matter_id: mid });
check(got.matter.status === 'judged', `get_matter ${JSON.stringify(got)}`);
const chain = await call(requester, 'matter_receipts', { matter_id: mid });
check(chain.count === 4 && chain.receipts.length === 4, `chain ${chain.count}`);
for (const r of chain.receipts) check((await call(anon, 'verify_receipt', { receipt: r })).valid === true, `a Matter receipt does not verify`);

// A replay batch: the checker uploaded through the tool, replayed on a
// passing and a failing artifact.
const wasm = readFileSync(config.wasm).toString('base64');
const up = await call(anon, 'upload_checker', { wasm_base64: wasm, idempotency_key: `upload-${config.tag}` });
check(up.kind === 'wasm' && /^[0-9a-f]{64}$/.test(up.sha256), `upload ${JSON.stringify(up)}`);
check((await call(anon, 'get_checker', { sha256: up.sha256 })).sha256 === up.sha256, 'get_checker');
const batch = await call(anon, 'replay_checker', { checker: { sha256: up.sha256 }, artifacts: ['1 1\n2 4\n3 9\n', '4'], no_memo: true });
check(batch.count === 2 && batch.outcomes[0].kind === 'pass' && batch.outcomes[1].kind !== 'pass', `replays ${JSON.stringify(batch).slice(0, 400)}`);

// The validation that ran can fail: a wrong answer does not fit.
const wrong = structuredClone(verdict);
delete wrong.proof;
check(!outputs.dispute_delivery(wrong).valid, 'a receipt without its proof fits the dispute output schema');

for (const c of [anon, requester, solver]) await c.close();
console.log(`ok: ${revision}: ${tools.length} tools listed; ${calls} tool calls validated: a court case to a refund, a signed Matter to a judged verdict, a replay batch`);
