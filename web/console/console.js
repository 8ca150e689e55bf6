// Assay console: reads the court's public routes and draws them; verifies
// receipts in the browser. No framework, no build step, nothing fetched from
// anywhere but the server that served this page.
'use strict';

// ---- DOM helpers: text goes in as text, never as HTML ----

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(k instanceof Node ? k : String(k));
  return e;
}

const SVGNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function fill(node, ...kids) { node.replaceChildren(...kids.filter((k) => k != null)); }

async function getJSON(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

const fmtTime = (ts) => new Date(ts * 1000).toISOString().replace('T', ' ').slice(0, 19);
const payoutText = (p) => (p ? Object.entries(p).map(([who, n]) => `${who} ${n}`).join(', ') : '');
const caseLink = (id) => el('a', { href: `#/case/${encodeURIComponent(id)}` }, id);

// ---- Receipt verification (RFC 8785 + SHA-256 + Ed25519), all local ----

// jcs is RFC 8785 for the values JSON.parse returns: keys sorted by UTF-16
// code units (Array.prototype.sort's order), numbers and strings as ES6
// JSON.stringify writes them.
const jcs = (v) => (v === null || typeof v !== 'object' ? JSON.stringify(v)
  : Array.isArray(v) ? `[${v.map(jcs).join(',')}]`
    : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`);

function unb64(s) {
  if (typeof s !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw new Error('not standard base64');
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

// verifyReceipt checks text as a receipt against the court's published keys.
// It answers {valid, hashOK, sigOK, keyOK, envelopeOK, reason}.
async function verifyReceipt(text, keys) {
  const res = { valid: false, hashOK: false, sigOK: false, keyOK: false, envelopeOK: false, reason: '' };
  let r;
  try { r = JSON.parse(text); } catch (e) { res.reason = `not JSON: ${e.message}`; return res; }
  if (r && typeof r === 'object' && !r.credentialSubject && r.receipt) r = r.receipt; // bare or {"receipt": …}
  if (!r || typeof r !== 'object' || !r.credentialSubject || typeof r.credentialSubject !== 'object' || !r.proof) {
    res.reason = 'not a receipt: credentialSubject and proof are required'; return res;
  }
  if (!globalThis.crypto || !crypto.subtle) {
    res.reason = 'Web Crypto is unavailable here: the browser offers it only on https or localhost'; return res;
  }
  const p = r.proof;
  const data = new TextEncoder().encode(jcs(r.credentialSubject));
  res.hashOK = hex(await crypto.subtle.digest('SHA-256', data)) === p.subjectHash;
  try {
    const key = await crypto.subtle.importKey('raw', unb64(p.publicKey), { name: 'Ed25519' }, false, ['verify']);
    res.sigOK = await crypto.subtle.verify('Ed25519', key, unb64(p.signature), data);
  } catch (e) {
    res.reason = `signature not checked: ${e.message}`;
  }
  // The envelope's unsigned fields must repeat what the subject signed.
  const b = r.credentialSubject.receipt || {};
  const k = (keys || []).find((x) => x.public_key === p.publicKey);
  res.envelopeOK = r.id === `urn:assay:receipt:${b.id}` && r.issuanceDate === b.issued && p.created === b.issued
    && Array.isArray(r.type) && r.type.length === 2 && r.type[0] === 'VerifiableCredential' && r.type[1] === b.type
    && (!k || (r.issuer === k.did && p.verificationMethod === `${k.did}#${k.did.slice('did:key:'.length)}`));
  if (k) {
    const t = Date.parse(b.issued);
    const from = k.not_before ? Date.parse(k.not_before) : -Infinity;
    const to = k.not_after ? Date.parse(k.not_after) : Infinity;
    res.keyOK = t >= from && t <= to;
  }
  res.valid = res.hashOK && res.sigOK && res.keyOK && res.envelopeOK;
  if (!res.reason) {
    res.reason = res.valid ? `signed by the court's key ${k.did} within its window`
      : !res.hashOK ? 'proof.subjectHash is not the SHA-256 of the canonical credentialSubject: the subject or the hash was changed'
        : !res.sigOK ? 'proof.signature does not verify over the canonical credentialSubject'
          : !k ? 'proof.publicKey is not one of the court\'s published keys'
            : !res.keyOK ? 'issued outside the key\'s window'
              : 'the envelope (id, type, dates, issuer) does not match what the subject signed';
  }
  return res;
}

// ---- The transparency log (C2SP signed-note, tlog-checkpoint, tlog-proof; RFC 6962/9162) ----

const sha256 = async (...parts) => {
  const n = parts.reduce((k, x) => k + x.length, 0);
  const all = new Uint8Array(n);
  let off = 0;
  for (const x of parts) { all.set(x, off); off += x.length; }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', all));
};
const bytesEqual = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const utf8 = (s) => new TextEncoder().encode(s);

// openCheckpoint checks a checkpoint note against the log's verifier key
// (name+hash+base64(0x01 ‖ Ed25519 key)) and reads it. It answers
// {signed, origin, size, root, cosignatures, reason}: cosignatures counts
// the signature lines of other keys (the witnesses'), which are not
// checked here.
async function openCheckpoint(text, vkey) {
  const res = { signed: false, origin: '', size: 0, root: null, cosignatures: 0, reason: '' };
  const i = vkey.indexOf('+');
  const j = vkey.indexOf('+', i + 1);
  const name = vkey.slice(0, i);
  const split = text.lastIndexOf('\n\n');
  if (i < 0 || j < 0 || split < 0) { res.reason = 'not a signed note, or not a verifier key'; return res; }
  const body = text.slice(0, split + 1);
  const [origin, size, root] = body.split('\n');
  Object.assign(res, { origin, size: Number(size), root: unb64(root) });
  const key = unb64(vkey.slice(j + 1));
  const id = (await sha256(utf8(`${name}\n`), key)).slice(0, 4);
  if (key[0] !== 1 || key.length !== 33 || hex(id) !== vkey.slice(i + 1, j)) { res.reason = 'the log key is not an Ed25519 verifier key'; return res; }
  const pub = await crypto.subtle.importKey('raw', key.slice(1), { name: 'Ed25519' }, false, ['verify']);
  for (const line of text.slice(split + 2).split('\n')) {
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!m) continue;
    const sig = unb64(m[2]);
    if (m[1] === name && bytesEqual(sig.slice(0, 4), id)) {
      res.signed = res.signed || await crypto.subtle.verify('Ed25519', pub, sig.slice(4), utf8(body));
    } else res.cosignatures++;
  }
  if (!res.signed) res.reason = 'no valid signature of the log\'s key';
  else if (origin !== name) { res.signed = false; res.reason = `origin ${origin} is not the key's name ${name}`; }
  return res;
}

// rootFromPath is the root an RFC 6962 audit path leads to (RFC 9162
// 2.1.3.2), or null when the path is too long or too short.
async function rootFromPath(index, size, leaf, path) {
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(Uint8Array.of(1), p, r);
      while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else r = await sha256(Uint8Array.of(1), r, p);
    fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

// checkInclusion checks what GET /receipts/{id}?log=true says of receipt
// r: that the log's entry pins r (its id, kind, issue time, subject hash,
// key and signature), and that its C2SP tlog-proof leads from the entry to
// the root of a checkpoint the log's key signed. It answers {included,
// pinned, pathOK, signed, index, size, reason}.
async function checkInclusion(r, log, vkey) {
  const res = { included: false, pinned: false, pathOK: false, signed: false, index: log.index, size: 0, reason: '' };
  const want = ['assay-receipt/v1', `id ${String(r.id).replace('urn:assay:receipt:', '')}`, `kind ${r.type && r.type[1]}`,
    `issued ${r.issuanceDate}`, `subject ${r.proof.subjectHash}`, `key ${r.proof.publicKey}`, `signature ${r.proof.signature}`].join('\n') + '\n';
  res.pinned = log.entry === want || (log.entry || '').startsWith(`${want}supersedes `);
  const cut = (log.proof || '').indexOf('\n\n');
  const head = (log.proof || '').slice(0, cut).split('\n');
  if (cut < 0 || head[0] !== 'c2sp.org/tlog-proof@v1') { res.reason = 'no tlog-proof'; return res; }
  const lines = head.slice(head[1] && head[1].startsWith('extra ') ? 2 : 1);
  const index = Number((lines[0] || '').replace('index ', ''));
  const cp = await openCheckpoint(log.proof.slice(cut + 2), vkey);
  res.signed = cp.signed;
  res.size = cp.size;
  const leaf = await sha256(Uint8Array.of(0), utf8(log.entry || ''));
  const root = await rootFromPath(index, cp.size, leaf, lines.slice(1).map(unb64));
  res.pathOK = index === log.index && root != null && cp.root != null && bytesEqual(root, cp.root);
  res.included = res.pinned && res.pathOK && res.signed;
  res.reason = res.included ? `entry ${index} of a tree of ${cp.size}, in a checkpoint the log's key signed`
    : !res.pinned ? 'the log\'s entry does not pin this receipt'
      : !res.signed ? `the checkpoint does not verify: ${cp.reason}`
        : 'the audit path does not lead to the checkpoint\'s root';
  return res;
}

// ---- Prometheus text format ----

// parseMetrics reads the text exposition format into samples
// [{name, labels, value}]; comments and malformed lines are skipped.
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[3]))) labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    }
    const value = Number(m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : m[4]);
    if (!Number.isNaN(value)) out.push({ name: m[1], labels, value });
  }
  return out;
}

// replayFigures reads what the console shows of replays from the samples:
// checker runs started (assay_checker_runs_started_total, or else the sum of
// the runs by outcome), memo hits (assay_replay_memo_hits_total), and runs by
// outcome kind (the assay_ counters of checker runs with an outcome label).
function replayFigures(samples) {
  const sum = (name) => samples.filter((s) => s.name === name).reduce((n, s) => n + s.value, 0);
  const has = (name) => samples.some((s) => s.name === name);
  const byOutcome = {};
  let outcomes = 0;
  for (const s of samples) {
    if (!/^assay_.*(check|replay|run).*_total$/.test(s.name) || s.labels.outcome === undefined) continue;
    byOutcome[s.labels.outcome] = (byOutcome[s.labels.outcome] || 0) + s.value;
    outcomes += s.value;
  }
  const runs = has('assay_checker_runs_started_total') ? sum('assay_checker_runs_started_total') : outcomes;
  return { runs, memoHits: sum('assay_replay_memo_hits_total'), byOutcome };
}

// ---- Charts (inline SVG) ----

function barChart(title, entries, width = 260) {
  const max = Math.max(1, ...entries.map(([, n]) => n));
  const rowH = 18;
  const chart = svg('svg', { class: 'chart', width, height: entries.length * rowH + 2, role: 'img', 'aria-label': title },
    svg('title', {}, `${title}: ${entries.map(([k, n]) => `${k} ${n}`).join(', ')}`));
  entries.forEach(([label, n], i) => {
    const w = Math.max(1, Math.round((width - 130) * n / max));
    chart.append(
      svg('text', { x: 0, y: i * rowH + 13, class: 'label' }, label),
      svg('rect', { x: 90, y: i * rowH + 3, width: w, height: rowH - 6, class: `bar bar-${label.replace(/[^a-z0-9_]/gi, '')}` }),
      svg('text', { x: 94 + w, y: i * rowH + 13, class: 'value' }, String(n)));
  });
  return chart;
}

function sparkline(title, points, width = 260, height = 48) {
  const chart = svg('svg', { class: 'chart spark', width, height, role: 'img', 'aria-label': title }, svg('title', {}, title));
  if (points.length < 2) return chart;
  const max = Math.max(1e-9, ...points);
  const step = width / (points.length - 1);
  const d = points.map((v, i) => `${i ? 'L' : 'M'}${(i * step).toFixed(1)},${(height - 2 - (height - 4) * v / max).toFixed(1)}`).join(' ');
  chart.append(svg('path', { d, class: 'line' }));
  return chart;
}

// ---- Overview ----

const state = { keys: [], metricsHistory: [], log: null };

async function loadHealth() {
  try {
    const h = await getJSON('/health');
    fill($('#health'), `court key ${h.court_public_key} · ${h.version || 'dev'} · up ${h.uptime_seconds}s · juror ${h.tier1_juror}`);
  } catch (e) { fill($('#health'), `health unavailable (${e.message})`); }
}

async function loadKeys() {
  try { state.keys = (await getJSON('/.well-known/assay-keys')).keys || []; } catch { state.keys = []; }
}

async function loadLedger() {
  const body = $('#ledger .body');
  try {
    const l = await getJSON('/ledger');
    const rows = Object.entries(l.sums || {}).map(([cur, n]) => el('tr', {}, el('td', {}, cur), el('td', { class: 'num' }, n)));
    fill(body, el('p', { class: l.balanced ? 'ok' : 'bad', id: 'ledger-balanced' }, l.balanced ? 'balanced: every currency sums to zero' : 'NOT balanced'),
      el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'currency'), el('th', {}, 'sum over all accounts'))), el('tbody', {}, ...rows)));
    body.classList.remove('muted');
  } catch (e) { fill(body, `ledger unavailable (${e.message})`); }
}

async function loadLogKey() {
  try {
    const r = await fetch('/log/key', { headers: { Accept: 'application/json' } });
    state.log = r.ok ? await r.json() : null;
  } catch { state.log = null; }
}

async function loadLog() {
  const card = $('#log');
  const body = $('#log .body');
  if (!state.log) {
    fill(body, el('p', { id: 'log-off' }, 'this server keeps no transparency log'));
    return;
  }
  let text;
  try {
    const r = await fetch('/log/checkpoint');
    if (r.status === 404) { fill(body, el('p', {}, 'no checkpoint published yet'), el('p', { class: 'muted' }, state.log.origin)); return; }
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    text = await r.text();
  } catch (e) { fill(body, `log unavailable (${e.message})`); return; }
  const cp = await openCheckpoint(text, state.log.verifier_key);
  card.dataset.size = String(cp.size);
  card.dataset.signed = String(cp.signed);
  body.classList.remove('muted');
  const w = state.log.witnesses || [];
  fill(body, el('p', { id: 'log-size' }, el('strong', {}, String(cp.size)), ` receipt${cp.size === 1 ? '' : 's'} in the log`),
    el('p', { class: cp.signed ? 'ok' : 'bad', id: 'log-signed' }, cp.signed ? '✓ checkpoint signed by the log\'s key (checked in this browser)' : `✗ ${cp.reason}`),
    el('table', {}, el('tbody', {},
      el('tr', {}, el('td', {}, 'origin'), el('td', {}, el('code', {}, cp.origin))),
      el('tr', {}, el('td', {}, 'root'), el('td', {}, el('code', { title: text }, hex(cp.root || []).slice(0, 16) + '…'))),
      el('tr', {}, el('td', {}, 'witnesses'), el('td', {}, w.length ? `${cp.cosignatures} cosignatures; ${w.length} witness${w.length === 1 ? '' : 'es'}, quorum ${state.log.quorum}` : 'none')))));
}

async function loadActivity() {
  let a;
  try { a = await getJSON('/activity?limit=200'); } catch (e) {
    fill($('#cases-note'), `activity unavailable (${e.message})`); return;
  }
  const events = a.events || [];
  fill($('#activity tbody'), ...events.slice(0, 50).map((ev) => el('tr', {},
    el('td', { class: 'num' }, ev.seq), el('td', {}, fmtTime(ev.ts)), el('td', {}, ev.event),
    el('td', {}, ev.contract_id ? caseLink(ev.contract_id) : ''), el('td', {}, ev.status || ''),
    el('td', {}, [ev.verdict && `verdict ${ev.verdict}`, ev.tier, payoutText(ev.payout), ev.price != null && `price ${ev.price} ${ev.currency || ''}`].filter(Boolean).join(' · ')))));

  // A case is a contract: its newest event tells its state.
  const cases = new Map();
  for (const ev of [...events].reverse()) {
    if (!ev.contract_id) continue;
    const c = cases.get(ev.contract_id) || { id: ev.contract_id };
    Object.assign(c, { status: ev.status || c.status, last: ev.event, ts: ev.ts });
    if (ev.price != null) c.price = `${ev.price} ${ev.currency || ''}`;
    if (ev.verdict) Object.assign(c, { verdict: ev.verdict, tier: ev.tier, payout: ev.payout });
    cases.set(ev.contract_id, c);
  }
  const list = [...cases.values()].sort((x, y) => y.ts - x.ts);
  fill($('#cases tbody'), ...list.map((c) => el('tr', { 'data-contract': c.id },
    el('td', {}, caseLink(c.id)), el('td', {}, c.status || ''),
    el('td', { class: c.verdict ? `verdict verdict-${c.verdict}` : '' }, c.verdict || ''),
    el('td', {}, c.tier || ''), el('td', {}, payoutText(c.payout)), el('td', {}, c.price || ''), el('td', {}, c.last))));
  fill($('#cases-note'), `${list.length} cases in the last ${events.length} of ${a.total_seq} events`);

  const counts = {};
  for (const c of list) if (c.verdict) counts[c.verdict] = (counts[c.verdict] || 0) + 1;
  const tiers = {};
  for (const c of list) if (c.tier) tiers[c.tier] = (tiers[c.tier] || 0) + 1;
  const body = $('#verdicts .body');
  body.classList.remove('muted');
  const entries = Object.entries(counts).sort();
  fill(body, entries.length ? barChart('verdicts', entries) : el('p', { class: 'muted' }, 'no verdicts yet'),
    Object.keys(tiers).length ? el('p', { class: 'muted' }, 'decided by ', Object.entries(tiers).sort().map(([t, n]) => `${t} ${n}`).join(', ')) : null);
}

async function loadMarket() {
  const body = $('#market .body');
  try {
    const s = await getJSON('/market/stats');
    const pick = [['active listings', s.listings_active], ['purchases', s.purchases], ['held', s.purchases_held],
      ['settled', s.purchases_settled], ['refunded', s.purchases_refunded], ['open challenges', s.challenges_open],
      ['volume settled', `$${s.volume_settled_usd}`], ['fees', `$${s.fees_usd}`], ['money in market', `$${s.money_in_market_usd}`]];
    fill(body, el('table', {}, el('tbody', {}, ...pick.map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', { class: 'num' }, v))))));
    body.classList.remove('muted');
  } catch (e) { fill(body, `market unavailable (${e.message})`); }
}

async function searchListings(ev) {
  ev.preventDefault();
  const q = new FormData(ev.target).get('query');
  try {
    const r = await getJSON(`/market/listings?query=${encodeURIComponent(q)}&limit=20`);
    fill($('#listings tbody'), ...(r.results || []).map((l) => el('tr', {},
      el('td', {}, el('code', {}, l.listing_id)), el('td', {}, l.title), el('td', { class: 'num' }, l.verification_level),
      el('td', { class: 'num' }, `$${l.price_usd}`), el('td', {}, l.seller ? l.seller.agent_id : ''),
      el('td', { class: 'num' }, l.match ? l.match.confidence.toFixed(2) : ''))));
    fill($('#listings-note'), `${r.count} listing${r.count === 1 ? '' : 's'}${r.no_reliable_match ? ' (no reliable match)' : ''}${r.advisory ? ` · ${r.advisory}` : ''}`);
  } catch (e) { fill($('#listings-note'), `search failed (${e.message})`); }
}

async function loadMetrics() {
  const body = $('#replays .body');
  let text;
  try {
    const r = await fetch('/metrics', { headers: { Accept: 'text/plain' } });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    text = await r.text();
  } catch (e) {
    fill(body, el('p', { id: 'metrics-unavailable' }, 'metrics unavailable'), el('p', { class: 'muted' }, `GET /metrics: ${e.message}`));
    return;
  }
  body.classList.remove('muted');
  const f = replayFigures(parseMetrics(text));
  // Throughput: checks answered (runs and memo hits) per second between polls.
  const h = state.metricsHistory;
  h.push({ t: performance.now() / 1000, total: f.runs + f.memoHits });
  if (h.length > 60) h.shift();
  const rates = h.slice(1).map((p, i) => Math.max(0, (p.total - h[i].total) / Math.max(1e-3, p.t - h[i].t)));
  const last = rates.length ? rates[rates.length - 1] : 0;
  const outcomes = Object.entries(f.byOutcome).sort();
  fill(body, el('p', { id: 'replay-figures' }, `${f.runs} checker runs · ${f.memoHits} memo hits · ${last.toFixed(1)}/s now`),
    sparkline('checks answered per second, last three minutes', rates),
    outcomes.length ? barChart('checker runs by outcome kind', outcomes) : el('p', { class: 'muted' }, 'no outcome kinds yet'));
}

// ---- Case page ----

async function showCase(id) {
  fill($('#case-id'), id);
  fill($('#case-fields'), 'loading…');
  fill($('#receipts'));
  let c;
  try { c = await getJSON(`/contracts/${encodeURIComponent(id)}`); } catch (e) { fill($('#case-fields'), `case unavailable (${e.message})`); return; }
  const fields = ['status', 'verdict', 'tier', 'buyer', 'seller', 'price', 'currency', 'contract_hash', 'evidence_hash', 'created_at', 'funded_at', 'delivered_at', 'resolved_at'];
  fill($('#case-fields'), ...fields.filter((f) => c[f] != null).flatMap((f) => [el('dt', {}, f), el('dd', { id: `case-${f}` }, String(c[f]))]),
    el('dt', {}, 'acceptance'), el('dd', {}, el('code', {}, JSON.stringify(c.acceptance || {}))));
  for (const rid of c.receipts || []) {
    let text;
    try {
      const r = await fetch(`/receipts/${encodeURIComponent(rid)}`);
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      text = JSON.stringify(JSON.parse(await r.text()), null, 2);
    } catch (e) { $('#receipts').append(el('p', {}, `receipt ${rid} unavailable (${e.message})`)); continue; }
    const area = el('textarea', { class: 'receipt', rows: 18, spellcheck: 'false', 'data-receipt': rid });
    area.value = text;
    const out = el('div', { class: 'verify-result', 'data-receipt': rid });
    const button = el('button', { class: 'verify', 'data-receipt': rid, type: 'button' }, 'Verify in this browser');
    button.addEventListener('click', async () => {
      fill(out, 'verifying…');
      out.className = 'verify-result';
      delete out.dataset.valid;
      const v = await verifyReceipt(area.value, state.keys);
      out.classList.add(v.valid ? 'ok' : 'bad');
      out.dataset.valid = String(v.valid);
      const mark = (b) => (b ? '✓' : '✗');
      fill(out, el('strong', {}, v.valid ? 'valid' : 'invalid'), ` — ${v.reason}`,
        el('br'), `hash ${mark(v.hashOK)} · signature ${mark(v.sigOK)} · court key ${mark(v.keyOK)} · envelope ${mark(v.envelopeOK)}`);
    });
    const logged = el('div', { class: 'log-result', 'data-receipt': rid });
    $('#receipts').append(el('section', { class: 'receipt-box' }, el('h3', {}, `receipt ${rid}`), area, el('p', {}, button), out, logged));
    if (state.log) watchInclusion(id, rid, logged);
  }
  document.body.dataset.case = id;
}

// watchInclusion shows what the transparency log says of receipt rid,
// checked in this browser, and asks again each second while the receipt
// waits for a checkpoint and case id's page is open.
async function watchInclusion(id, rid, node) {
  let b;
  try {
    const r = await fetch(`/receipts/${encodeURIComponent(rid)}?log=true`);
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    b = await r.json();
  } catch (e) { fill(node, `transparency log: unavailable (${e.message})`); return; }
  const log = b.log || {};
  node.dataset.status = log.status;
  if (log.status !== 'included') {
    fill(node, `transparency log: ${log.status}`, log.status === 'absent' ? ' (signed while the log was off)' : ' (a checkpoint includes it within about a second)');
    if (log.status !== 'absent') setTimeout(() => { if (document.body.dataset.case === id && !$('#case').hidden) watchInclusion(id, rid, node); }, 1000);
    return;
  }
  const v = await checkInclusion(b.receipt, log, state.log.verifier_key);
  node.className = `log-result ${v.included ? 'ok' : 'bad'}`;
  node.dataset.included = String(v.included);
  const mark = (x) => (x ? '✓' : '✗');
  fill(node, el('strong', {}, v.included ? `in the transparency log at index ${log.index}` : 'NOT shown in the transparency log'), ` — ${v.reason}`,
    el('br'), `entry pins the receipt ${mark(v.pinned)} · audit path ${mark(v.pathOK)} · checkpoint signed ${mark(v.signed)}`,
    ...(log.superseded_by || []).map((s) => [el('br'), `superseded by the receipt of entry ${s.index}: ${(/^id (\S+)$/m.exec(s.entry || '') || [])[1] || '?'}`]).flat());
}

// ---- Routing and the live loop ----

function route() {
  const m = /^#\/case\/(.+)$/.exec(location.hash);
  $('#overview').hidden = !!m;
  $('#case').hidden = !m;
  if (m) showCase(decodeURIComponent(m[1]));
  else refresh();
}

let timer;
async function refresh() {
  clearTimeout(timer);
  if (!$('#case').hidden) return;
  await Promise.all([loadHealth(), loadLedger(), loadActivity(), loadMarket(), loadMetrics(), loadLog()]);
  document.body.dataset.loaded = 'true';
  if ($('#live').checked) timer = setTimeout(refresh, 3000);
}

document.addEventListener('DOMContentLoaded', async () => {
  $('#listing-search').addEventListener('submit', searchListings);
  $('#live').addEventListener('change', refresh);
  window.addEventListener('hashchange', route);
  await Promise.all([loadKeys(), loadLogKey()]);
  route();
});
