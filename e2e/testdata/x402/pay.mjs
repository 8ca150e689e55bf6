// Pays assay serve's market over x402 with the stock client: @x402/fetch's
// wrapFetchWithPayment and @x402/evm's ExactEvmScheme over a viem account.
// Then crafts refused payments with viem's signTypedData directly.
//
// usage: node pay.mjs BASE PAID_LISTING OTHER_LISTING BUYER_KEY BUYER_API_KEY SAVER_API_KEY
// The market is signed: each request carries the API key of the agent it
// acts for (x402-buyer, x402-saver) as a bearer header, beside the payment.
// Prints "ok: <json>" on success; exits non-zero with the reason otherwise.
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { getAddress } from "viem";
import { webcrypto, randomBytes } from "node:crypto";

// Node 18 has Web Crypto only behind a flag; the EVM scheme draws its
// nonces from globalThis.crypto.
if (!globalThis.crypto) globalThis.crypto = webcrypto;

const [base, paidListing, otherListing, buyerKey, buyerAPIKey, saverAPIKey] = process.argv.slice(2);
const account = privateKeyToAccount(buyerKey);
const agent = "x402-buyer"; // the agent id the request names; the payer is the account
const json = { "Content-Type": "application/json", Authorization: `Bearer ${buyerAPIKey}` };

function fail(msg) {
  console.error("fail: " + msg);
  process.exit(1);
}
const decode = (h) => JSON.parse(Buffer.from(h, "base64").toString("utf8"));
const encode = (v) => Buffer.from(JSON.stringify(v)).toString("base64");
const purchase = (listing) => `${base}/market/listings/${listing}/purchase`;
const body = JSON.stringify({ agent, purpose: "x402 e2e" });

// 1. Unpaid: 402 with the requirements in PAYMENT-REQUIRED.
const unpaid = await fetch(purchase(paidListing), { method: "POST", headers: json, body });
if (unpaid.status !== 402) fail(`unpaid purchase answered ${unpaid.status}: ${await unpaid.text()}`);
const required = decode(unpaid.headers.get("PAYMENT-REQUIRED"));
const unpaidBody = await unpaid.json();
if (required.x402Version !== 2 || required.accepts.length !== 1 || unpaidBody.error.code !== "payment_required") {
  fail("402 without v2 requirements: " + JSON.stringify({ required, unpaidBody }));
}
const accepts = required.accepts[0];

// 2. The stock client pays and retries. The inner fetch records the
// PAYMENT-SIGNATURE it sent, to replay it below.
const sent = [];
const recording = (input, init) => {
  const req = new Request(input, init);
  if (req.headers.get("PAYMENT-SIGNATURE")) sent.push(req.headers.get("PAYMENT-SIGNATURE"));
  return fetch(req);
};
const client = new x402Client().register("eip155:*", new ExactEvmScheme(account));
const payingFetch = wrapFetchWithPayment(recording, client);
const paid = await payingFetch(purchase(paidListing), { method: "POST", headers: json, body });
if (paid.status !== 201) fail(`paid purchase answered ${paid.status}: ${await paid.text()}`);
const settlement = decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE"));
const bought = await paid.json();
if (!settlement.success || getAddress(settlement.payer) !== account.address) fail("settlement " + JSON.stringify(settlement));
if (bought.purchase.payer !== account.address || bought.purchase.rail !== "x402" || bought.purchase.payment_ref !== "x402:" + settlement.transaction) {
  fail("purchase " + JSON.stringify(bought.purchase));
}
if (sent.length !== 1) fail(`the client sent ${sent.length} payments`);

// 3. A deposit paid the same way.
const dep = await payingFetch(`${base}/market/wallets/x402-saver/deposit`, { method: "POST", headers: { ...json, Authorization: `Bearer ${saverAPIKey}` }, body: JSON.stringify({ amount_usd: "0.75" }) });
if (dep.status !== 201) fail(`paid deposit answered ${dep.status}: ${await dep.text()}`);
const deposit = await dep.json();
if (deposit.balance_usd !== 0.75 || !dep.headers.get("PAYMENT-RESPONSE")) fail("deposit " + JSON.stringify(deposit));

// 4. Refused payments, crafted with viem's signTypedData: each answers a
// coded error and moves nothing (the Go test checks the balances).
const other = await fetch(purchase(otherListing), { method: "POST", headers: json, body });
if (other.status !== 402) fail(`second listing answered ${other.status}`);
const req = decode(other.headers.get("PAYMENT-REQUIRED")).accepts[0];
const now = Math.floor(Date.now() / 1000);
async function craft(change) {
  const authorization = {
    from: account.address, to: getAddress(req.payTo), value: req.amount,
    validAfter: "0", validBefore: String(now + req.maxTimeoutSeconds),
    nonce: "0x" + randomBytes(32).toString("hex"),
    ...change,
  };
  const signature = await account.signTypedData({
    domain: { name: req.extra.name, version: req.extra.version, chainId: Number(req.network.split(":")[1]), verifyingContract: getAddress(req.asset) },
    types: {
      TransferWithAuthorization: [
        { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "TransferWithAuthorization",
    message: {
      from: authorization.from, to: authorization.to, value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter), validBefore: BigInt(authorization.validBefore), nonce: authorization.nonce,
    },
  });
  return encode({ x402Version: 2, accepted: req, payload: { signature, authorization } });
}
const cases = {
  expired: await craft({ validBefore: String(now - 5) }),
  underpaid: await craft({ value: String(BigInt(req.amount) - 1n) }),
  wrong_recipient: await craft({ to: "0x000000000000000000000000000000000000dEaD" }),
  replayed: sent[0],
  malformed: "bm90IGEgcGF5bWVudA",
};
const refused = {};
for (const [name, header] of Object.entries(cases)) {
  const r = await fetch(purchase(otherListing), { method: "POST", headers: { ...json, "PAYMENT-SIGNATURE": header }, body });
  const b = await r.json();
  refused[name] = { status: r.status, code: b.error && b.error.code, payment_required: r.headers.has("PAYMENT-REQUIRED") };
}

console.log("ok: " + JSON.stringify({
  purchase_id: bought.purchase.purchase_id, payer: account.address, transaction: settlement.transaction,
  total_usd: bought.total_usd, deposit_ref: deposit.payment_ref, refused, paid_header: sent[0],
}));
