# Complete walkthrough B of shared/seeds/003_1e0c2d3a9b5079df.txt, verbatim
# (the seed file holds it on one line; the line breaks are restored). The
# test replaces the BASE line with the server under test.
BASE=https://lex-automata-999015027200.us-central1.run.app
CID=$(curl -s -X POST $BASE/contracts -H 'Content-Type: application/json' -d '{
  "buyer":"did:nanda:buyer","seller":"did:nanda:seller","price":50,
  "acceptance":{"assertions":[{"path":"rows","op":"gte","value":100}]}}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["contract_id"])')
curl -s -X POST $BASE/contracts/$CID/fund -H 'Content-Type: application/json' -d '{}'
curl -s -X POST $BASE/contracts/$CID/deliver -H 'Content-Type: application/json' \
  -d '{"deliverable":{"rows":3},"evidence":{}}'
curl -s -X POST $BASE/contracts/$CID/dispute -H 'Content-Type: application/json' \
  -d '{"reason":"far fewer rows than agreed"}'
# -> receipt with credentialSubject.verdict == "refund", tier == "tier0",
# payout == {"did:nanda:buyer": 50}
