// Makes paid requests with the stock client (@x402/fetch's
// wrapFetchWithPayment, @x402/evm's ExactEvmScheme, a viem account),
// against a server that may be killed while it handles a payment.
//
// usage: node crash.mjs BUYER_KEY
// Reads one request a line on stdin, {"url", "body", "api_key"}: POSTs
// body to url with the API key as a bearer token, paying what the 402
// asks. Prints one line for each: "answered: <json>" with the status, the
// body and the PAYMENT-SIGNATURE the client sent, or "crashed: <json>"
// with that header when the connection closed without an answer.
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { webcrypto } from "node:crypto";
import { createInterface } from "node:readline";

if (!globalThis.crypto) globalThis.crypto = webcrypto;

const client = new x402Client().register("eip155:*", new ExactEvmScheme(privateKeyToAccount(process.argv[2])));
for await (const line of createInterface({ input: process.stdin })) {
  const { url, body, api_key: apiKey } = JSON.parse(line);
  const sent = [];
  const recording = (input, init) => {
    const req = new Request(input, init);
    if (req.headers.get("PAYMENT-SIGNATURE")) sent.push(req.headers.get("PAYMENT-SIGNATURE"));
    return fetch(req);
  };
  const pay = wrapFetchWithPayment(recording, client);
  try {
    const res = await pay(url, { method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` }, body });
    const text = await res.text();
    console.log("answered: " + JSON.stringify({ status: res.status, body: text, header: sent[0] || "" }));
  } catch (err) {
    console.log((sent.length === 1 ? "crashed: " : "failed: ") + JSON.stringify({ header: sent[0] || "", error: String(err), sent: sent.length }));
  }
}
