package matters

import (
	"fmt"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
)

// Money of a staked quorum Matter lives on the shared ledger
// (runtime/ledger) in Currency: the requester's pay for N solvers and each
// solver's bond are held in the Matter's hold account from the moment they
// are posted until the Matter ends, and every movement is a ledger
// transfer listed in the receipt of the transition that made it.

// holdAccount is a Matter's hold on the ledger.
func holdAccount(matter string) string { return "hold:matters:" + matter }

// move posts one transfer of a Matter and lists it on the Matter.
func (s *Service) move(tx store.Tx, m *Matter, id, from, to string, amount int64, memo string, now time.Time) (Posting, error) {
	if err := ledger.Post(tx, ledger.Transfer{ID: id, From: from, To: to, Amount: amount, Currency: Currency, Memo: memo, At: now}); err != nil {
		return Posting{}, err
	}
	p := Posting{Transfer: id, From: from, To: to, Amount: amount, Currency: Currency}
	m.Exchange.Postings = append(m.Exchange.Postings, p)
	return p, nil
}

// debit moves amount from a wallet into the Matter's hold, refusing with
// insufficient_funds when the wallet holds less.
func (s *Service) debit(tx store.Tx, m *Matter, id, wallet string, amount int64, memo string, now time.Time) (Posting, error) {
	// One lock per account for every service: a market purchase and a
	// bond from the same wallet conflict.
	if err := ledger.Lock(tx, wallet); err != nil {
		return Posting{}, err
	}
	bal, err := ledger.Balance(tx, wallet, Currency)
	if err != nil {
		return Posting{}, err
	}
	if bal < amount {
		return Posting{}, fault.New(fault.Conflict, ECodeInsufficientFunds, "%s needs %d micro-USD and %s holds %d; fund the wallet first (the market's deposit route)", memo, amount, wallet, bal)
	}
	return s.move(tx, m, id, wallet, holdAccount(m.ID), amount, memo, now)
}

// release empties a Matter's hold, once: pay to the seats in the majority
// of a judged verdict that stands (none when overturned or when there is
// no verdict), the rest of the pay back to the requester; bonds back to
// the seats that revealed (and, when the Matter expired without a quorum,
// that committed), except the majority's of an overturned verdict; the
// bond of a seat that accepted and then did not commit or reveal goes to
// the requester.
func (s *Service) release(tx store.Tx, m *Matter, overturned bool, now time.Time) ([]Posting, error) {
	x := m.Exchange
	if x.Settled {
		return nil, nil
	}
	x.Settled = true
	if !x.staked() {
		return nil, nil
	}
	var moved []Posting
	add := func(id, to string, amount int64, memo string) error {
		p, err := s.move(tx, m, id, x.Hold, to, amount, memo, now)
		moved = append(moved, p)
		return err
	}
	requester := ledger.AgentAccount(m.RequesterID)
	judged := m.Status == StatusJudged || m.Status == StatusAppealed
	unpaid := x.PayMicro * int64(x.Quorum.Solvers)
	for i, st := range x.Seats {
		majority := st.Majority != nil && *st.Majority
		if x.PayMicro > 0 && judged && majority && !overturned {
			if err := add(fmt.Sprintf("%s.pay.%d", m.ID, i), ledger.AgentAccount(st.SolverID), x.PayMicro, fmt.Sprintf("pay seat %d of %s", i, m.ID)); err != nil {
				return nil, err
			}
			unpaid -= x.PayMicro
		}
		if !st.BondHeld {
			continue
		}
		// At an expiry (the quorum was not met) a seat that committed did
		// its part: reveals never opened.
		noShow := st.Status != SolverRevealed && (m.Status != StatusExpired || st.Status != SolverCommitted)
		switch {
		case noShow:
			err := add(fmt.Sprintf("%s.forfeit.%d", m.ID, i), requester, x.BondMicro, fmt.Sprintf("bond of seat %d of %s forfeited: it accepted and did not commit or reveal", i, m.ID))
			if err != nil {
				return nil, err
			}
		case overturned && majority:
			err := add(fmt.Sprintf("%s.forfeit.%d", m.ID, i), requester, x.BondMicro, fmt.Sprintf("bond of seat %d of %s forfeited: verdict overturned on appeal", i, m.ID))
			if err != nil {
				return nil, err
			}
		default:
			err := add(fmt.Sprintf("%s.bond-return.%d", m.ID, i), ledger.AgentAccount(st.SolverID), x.BondMicro, fmt.Sprintf("bond of seat %d of %s returned", i, m.ID))
			if err != nil {
				return nil, err
			}
		}
	}
	if unpaid > 0 {
		if err := add(m.ID+".refund", requester, unpaid, "unearned pay of "+m.ID+" returned"); err != nil {
			return nil, err
		}
	}
	return moved, nil
}
