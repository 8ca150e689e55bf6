// Drives assay serve's /mcp with the official TypeScript MCP SDK, as a
// stock client would: listTools (the SDK's own schema for tools/list, and
// every input and output schema compiled by the SDK's own validator), then
// publish -> search -> purchase -> challenge through callTool, with the
// SDK's validation of structuredContent against each tool's outputSchema,
// and the protocol's errors. Exits non-zero on the first failure.
//
// usage: node flow.mjs BASE OPERATOR_TOKEN CHECKER_SHA256 [API_KEYS_JSON]
// The caller has funded the wallets of "sdk-buyer" and "sdk-seller-b" and
// uploaded the checker (squares.wasm: passes "1 1\n2 4\n3 9\n", fails
// with evidence "4"). On a signed market API_KEYS_JSON maps each agent
// (sdk-seller, sdk-seller-b, sdk-buyer) to its API key: each agent's calls
// go through a client of its own, whose HTTP requests carry
// Authorization: Bearer <its key>, and the flow checks that a client
// without a key, or with another agent's, is refused.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EmptyResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const [base, operatorToken, checkerSHA, apiKeysJSON] = process.argv.slice(2);
const apiKeys = apiKeysJSON ? JSON.parse(apiKeysJSON) : null;
const url = new URL('/mcp', base);

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}

async function connect(headers) {
  const client = new Client({ name: 'assay-sdk-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

// walk checks that every subschema is an object schema with a type (or a
// union of typed branches), and, for inputs, a description of every
// argument.
function walk(tool, where, s, input) {
  check(s !== null && typeof s === 'object' && !Array.isArray(s), `${tool} ${where}: schema is ${JSON.stringify(s)}, not an object`);
  check('type' in s || Array.isArray(s.anyOf) || Array.isArray(s.oneOf) || 'enum' in s || 'const' in s,
    `${tool} ${where}: no type: ${JSON.stringify(s).slice(0, 200)}`);
  for (const [name, p] of Object.entries(s.properties ?? {})) {
    if (input) check(typeof p?.description === 'string' && p.description.length > 0, `${tool} ${where}.${name}: no description`);
    walk(tool, `${where}.${name}`, p, input);
  }
  for (const b of s.anyOf ?? []) walk(tool, `${where}|`, b, false);
  if (s.items !== undefined) walk(tool, `${where}[]`, s.items, false);
  if (typeof s.additionalProperties === 'object') walk(tool, `${where}{}`, s.additionalProperties, false);
}

const ajv = new AjvJsonSchemaValidator();
const client = await connect({});
const operator = await connect({ Authorization: `Bearer ${operatorToken}` });
// as is the client an agent acts through: its own, with its API key, on a
// signed market; the one client on an open market.
const agents = {};
if (apiKeys) {
  for (const [agent, key] of Object.entries(apiKeys)) agents[agent] = await connect({ Authorization: `Bearer ${key}` });
}
const as = (agent) => agents[agent] ?? client;

// The server advertises tools only.
const caps = client.getServerCapabilities();
check(caps.tools && !caps.resources && !caps.prompts && !caps.logging, `capabilities ${JSON.stringify(caps)}`);

// tools/list: parsed by the SDK's ListToolsResultSchema (a non-object
// property schema throws here), then every schema compiled and walked.
const { tools } = await client.listTools();
await operator.listTools(); // the operator's client validates outputs too
const want = ['agent_profile', 'challenge_listing', 'deactivate_listing', 'get_listing', 'marketplace_stats',
  'publish_listing', 'purchase', 'resolve_challenge', 'search_listings'];
// Every service's tools are listed; the seed's nine are the market's.
for (const n of want) check(tools.some((t) => t.name === n), `no tool ${n} among ${tools.map((t) => t.name)}`);
const inputValidators = {};
const outputValidators = {};
for (const t of tools) {
  check(t.title && t.description, `${t.name}: no title or description`);
  const a = t.annotations ?? {};
  check(typeof a.readOnlyHint === 'boolean' && typeof a.destructiveHint === 'boolean' && typeof a.idempotentHint === 'boolean',
    `${t.name}: annotations ${JSON.stringify(a)}`);
  check(t.outputSchema, `${t.name}: no outputSchema`);
  walk(t.name, 'input', t.inputSchema, true);
  walk(t.name, 'output', t.outputSchema, false);
  inputValidators[t.name] = ajv.getValidator(t.inputSchema);
  outputValidators[t.name] = ajv.getValidator(t.outputSchema);
  // Output validation is on: the client holds a validator for the tool.
  check(client.getToolOutputValidator(t.name), `${t.name}: the client does not validate its output`);
}
const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
for (const n of ['search_listings', 'get_listing', 'agent_profile', 'marketplace_stats']) {
  check(hints[n].readOnlyHint && !hints[n].destructiveHint, `${n} is not read-only: ${JSON.stringify(hints[n])}`);
}
for (const n of ['purchase', 'deactivate_listing', 'challenge_listing', 'resolve_challenge']) {
  check(!hints[n].readOnlyHint && hints[n].destructiveHint && hints[n].idempotentHint, `${n} hints ${JSON.stringify(hints[n])}`);
}

// call calls a tool whose arguments fit its input schema and answers its
// structured content; the SDK has validated it against the output schema.
async function call(c, name, args) {
  const v = inputValidators[name](args);
  check(v.valid, `${name}: the arguments do not fit the input schema: ${v.errorMessage}`);
  const res = await c.callTool({ name, arguments: args });
  check(!res.isError, `${name}: tool error ${res.content?.[0]?.text}`);
  check(res.structuredContent, `${name}: no structured content`);
  // The same check, by hand: the validation the SDK ran can fail.
  check(outputValidators[name](res.structuredContent).valid, `${name}: output does not fit its schema`);
  return res.structuredContent;
}

// toolError calls a tool expected to refuse, and answers the code of its
// coded JSON error.
async function toolError(c, name, args) {
  const res = await c.callTool({ name, arguments: args });
  check(res.isError, `${name} ${JSON.stringify(args)}: not refused: ${JSON.stringify(res.structuredContent)}`);
  check(res.structuredContent === undefined, `${name}: a tool error carries structured content`);
  let body;
  try {
    body = JSON.parse(res.content[0].text);
  } catch {
    fail(`${name}: tool error is not JSON: ${res.content[0].text}`);
  }
  check(typeof body?.error?.code === 'string' && typeof body.error.message === 'string', `${name}: tool error not coded: ${res.content[0].text}`);
  return body.error.code;
}

// rpcError sends a request expected to fail with a JSON-RPC error.
async function rpcError(fn) {
  try {
    await fn();
  } catch (e) {
    check(e instanceof McpError, `not a JSON-RPC error: ${e}`);
    return e.code;
  }
  fail('no error');
}

const table = '1 1\n2 4\n3 9\n';
const problem = 'a table of the squares of the integers 1 to 3 for sdk rota checks';

// Publish at level 1: the checker passes on replay. The price is an exact
// decimal string, the estimate a number.
const pub = await call(as('sdk-seller'), 'publish_listing', {
  agent: 'sdk-seller', title: 'squares', problem_statement: problem, artifact: table, artifact_type: 'dataset',
  price_usd: '2.50', est_recompute_cost_usd: 25, checker: { sha256: checkerSHA }, idempotency_key: 'sdk-pub-1',
});
const id = pub.listing.listing_id;
check(pub.listing.verification_level === 1 && pub.replay.kind === 'pass' && pub.receipt.proof.signature, `published ${JSON.stringify(pub)}`);
const again = await call(as('sdk-seller'), 'publish_listing', {
  agent: 'sdk-seller', title: 'squares', problem_statement: problem, artifact: table, artifact_type: 'dataset',
  price_usd: '2.50', est_recompute_cost_usd: 25, checker: { sha256: checkerSHA }, idempotency_key: 'sdk-pub-1',
});
check(again.listing.listing_id === id, 'an idempotent retry published again');

// A JSON artifact, at level 2 with a bond.
const rota = await call(as('sdk-seller-b'), 'publish_listing', {
  agent: 'sdk-seller-b', title: 'rota', problem_statement: 'schedule 12 workers across shift=3 nurses sdk hospital rota',
  artifact: { shifts: [[1, 2], [3]] }, artifact_type: 'solution', price_usd: 1,
});
check(rota.listing.verification_level === 2 && rota.listing.bond_usd === 0.5, `level 2 ${JSON.stringify(rota.listing)}`);

// Bytes as base64: delivered in the form they were published.
const b64 = Buffer.from(table).toString('base64');
const bin = await call(as('sdk-seller'), 'publish_listing', {
  agent: 'sdk-seller', title: 'squares, base64', problem_statement: 'squares of 1 to 3 as bytes for sdk base64 checks',
  artifact: b64, encoding: 'base64', artifact_type: 'dataset', price_usd: '0.75', checker: { sha256: checkerSHA },
});
check(bin.listing.artifact_encoding === 'base64' && bin.replay.kind === 'pass', `base64 ${JSON.stringify(bin.listing)}`);
const binBought = await call(as('sdk-buyer'), 'purchase', { listing_id: bin.listing.listing_id, agent: 'sdk-buyer' });
check(binBought.artifact === b64 && binBought.encoding === 'base64', `base64 bought ${JSON.stringify(binBought)}`);

// Search, read.
const found = await call(client, 'search_listings', { query: problem });
const hit = found.results.find((r) => r.listing_id === id);
check(hit && hit.match.class === 'exact', `search ${JSON.stringify(found)}`);
const got = await call(client, 'get_listing', { listing_id: id });
check(got.has_checker && !('artifact' in got), `get_listing ${JSON.stringify(got)}`);

// Purchase: the artifact and a signed receipt at once.
const bought = await call(as('sdk-buyer'), 'purchase', { listing_id: id, agent: 'sdk-buyer', purpose: 'sdk checks', idempotency_key: 'sdk-buy-1' });
check(bought.artifact === table && bought.total_usd === 2.575 && bought.purchase.status === 'held' && bought.receipt.proof.signature,
  `bought ${JSON.stringify(bought)}`);
const boughtRota = await call(as('sdk-buyer'), 'purchase', { listing_id: rota.listing.listing_id, agent: 'sdk-buyer' });
check(JSON.stringify(boughtRota.artifact) === JSON.stringify({ shifts: [[1, 2], [3]] }), `rota artifact ${JSON.stringify(boughtRota.artifact)}`);

// Challenge: the seller's checker fails with the evidence: upheld at once.
const ch = await call(as('sdk-buyer'), 'challenge_listing', { listing_id: id, agent: 'sdk-buyer', evidence: '4', reason: '4 is missing' });
check(ch.challenge.status === 'upheld' && ch.challenge.basis === 'checker_replay' && ch.receipt.proof.signature, `challenge ${JSON.stringify(ch)}`);

// A level-2 challenge, with evidence as JSON, resolved by the operator:
// its answer carries the receipt too.
const open = await call(as('sdk-buyer'), 'challenge_listing', { listing_id: rota.listing.listing_id, agent: 'sdk-buyer', evidence: { unstaffed: [3] } });
check(open.challenge.status === 'open' && open.receipt, `open challenge ${JSON.stringify(open)}`);
check(await toolError(client, 'resolve_challenge', { challenge_id: open.challenge.challenge_id, verdict: 'uphold' }) === 'unauthorized',
  'resolve_challenge without the operator token');
const res = await call(operator, 'resolve_challenge', { challenge_id: open.challenge.challenge_id, verdict: 'uphold', reason: 'confirmed' });
check(res.challenge.status === 'upheld' && res.purchase.status === 'refunded' && res.receipt.proof.signature &&
  res.receipt.id.endsWith(res.challenge.receipts.at(-1)),
  `resolved ${JSON.stringify(res)}`);

const prof = await call(client, 'agent_profile', { agent_id: 'sdk-seller' });
check(prof.challenges_lost === 1, `profile ${JSON.stringify(prof)}`);
const stats = await call(client, 'marketplace_stats', {});
check(stats.challenges_upheld === 2 && stats.purchases === 3, `stats ${JSON.stringify(stats)}`);

// Errors in one JSON shape with the seed's codes: a service refusal and
// an argument that does not fit the schema alike.
const code = await toolError(as('sdk-buyer'), 'purchase', { listing_id: id, agent: 'sdk-buyer' });
check(code === 'already_purchased' || code === 'listing_not_active', `a second purchase: ${code}`);
check(await toolError(client, 'get_listing', { listing_id: 'lst_000000000000' }) === 'listing_not_found', 'unknown listing');
check(await toolError(client, 'get_listing', { listing_id: 5 }) === 'invalid_arguments', 'a number for a string');
check(await toolError(client, 'publish_listing', { agent: 'x' }) === 'invalid_arguments', 'missing arguments');
check(await toolError(as('sdk-seller'), 'publish_listing', {
  agent: 'sdk-seller', title: 't', problem_statement: problem, artifact: 'x', artifact_type: 'dataset', price_usd: '2.5000001',
}) === 'invalid_arguments', 'seven fractional digits');

check(!inputValidators.publish_listing({ agent: 'a', title: 't', problem_statement: 'p q', artifact: { a: 1 }, encoding: 'base64',
  artifact_type: 'dataset', price_usd: '1' }).valid, 'an object artifact fits the schema with encoding base64');
check(await toolError(as('sdk-seller'), 'publish_listing', { agent: 'sdk-seller', title: 't', problem_statement: problem, artifact: { a: 1 },
  encoding: 'base64', artifact_type: 'dataset', price_usd: '1' }) === 'invalid_arguments', 'an object artifact with encoding base64');

// JSON-RPC errors: an unknown tool is invalid params; a method not
// offered (resources, prompts, anything unknown) is method not found.
check(await rpcError(() => client.callTool({ name: 'no_such_tool', arguments: {} })) === ErrorCode.InvalidParams, 'unknown tool');
for (const method of ['resources/list', 'prompts/list', 'no/such_method']) {
  const code = await rpcError(() => client.request({ method, params: {} }, EmptyResultSchema));
  check(code === ErrorCode.MethodNotFound, `${method}: code ${code}`);
}

// The SDK's output validation can fail: a wrong answer is refused.
const wrong = structuredClone(bought);
delete wrong.receipt;
check(!outputValidators.purchase(wrong).valid, 'a purchase without its receipt fits the output schema');
wrong.receipt = bought.receipt;
wrong.total_usd = '2.575';
check(!outputValidators.purchase(wrong).valid, 'a string total fits the output schema');

// On a signed market, an agent acts only through its own credentials:
// no key, or another agent's, is refused with a coded tool error.
if (apiKeys) {
  check(await toolError(client, 'purchase', { listing_id: rota.listing.listing_id, agent: 'sdk-buyer' }) === 'signature_missing',
    'a purchase without an API key');
  check(await toolError(as('sdk-buyer'), 'publish_listing', {
    agent: 'sdk-seller', title: 'forged', problem_statement: problem, artifact: 'x', artifact_type: 'dataset', price_usd: '1',
  }) === 'agent_mismatch', "a publish in another agent's name");
  check(await toolError(as('sdk-seller'), 'challenge_listing', { listing_id: bin.listing.listing_id, agent: 'sdk-buyer', evidence: '4' }) === 'agent_mismatch',
    "a challenge in another buyer's name");
  check(bought.receipt.credentialSubject.actor?.startsWith('api_key:'), `the purchase receipt names no API key: ${JSON.stringify(bought.receipt.credentialSubject)}`);
}

for (const c of Object.values(agents)) await c.close();
await client.close();
await operator.close();
console.log(`ok: ${tools.length} tools listed and validated (the market's ${want.length} among them); publish, search, purchase, challenge and resolve through callTool${apiKeys ? ', each agent with its bearer API key' : ''}`);
