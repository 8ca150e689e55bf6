package x402

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
)

// What the chain knows of an authorization. An EIP-3009 token keeps, per
// authorizer and nonce, whether the nonce was used; a used nonce was
// either spent by a transferWithAuthorization (the AuthorizationUsed
// event, in the transaction that moved the money) or cancelled by its
// authorizer (AuthorizationCanceled, and no money moved). That is the
// one fact a facilitator cannot lose: asking it is how a payment whose
// settlement answer never arrived is resolved exactly.

// eip3009ABI is the part of EIP-3009 (and ERC-20) the rail reads.
const eip3009ABI = `[
 {"type":"function","name":"authorizationState","stateMutability":"view",
  "inputs":[{"name":"authorizer","type":"address"},{"name":"nonce","type":"bytes32"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"balanceOf","stateMutability":"view",
  "inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"event","name":"AuthorizationUsed","anonymous":false,
  "inputs":[{"name":"authorizer","type":"address","indexed":true},{"name":"nonce","type":"bytes32","indexed":true}]},
 {"type":"event","name":"AuthorizationCanceled","anonymous":false,
  "inputs":[{"name":"authorizer","type":"address","indexed":true},{"name":"nonce","type":"bytes32","indexed":true}]}
]`

var eip3009 = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(eip3009ABI))
	if err != nil {
		panic("x402: the EIP-3009 ABI does not parse: " + err.Error())
	}
	return a
}()

// The topics of the two events that use a nonce.
var (
	topicUsed     = eip3009.Events["AuthorizationUsed"].ID
	topicCanceled = eip3009.Events["AuthorizationCanceled"].ID
)

// Authorization states.
const (
	AuthorizationUnused   = "unused"
	AuthorizationUsed     = "used"     // spent by a transfer: the money moved
	AuthorizationCanceled = "canceled" // cancelled by its authorizer: nothing moved
)

// AuthorizationState is what the chain says of one authorization.
type AuthorizationState struct {
	// State is AuthorizationUnused, AuthorizationUsed or
	// AuthorizationCanceled.
	State string
	// Transaction is the transfer's transaction hash when it was used.
	Transaction string
}

// Chain answers what the chain knows of an EIP-3009 authorization: the
// asset's contract, its authorizer and its nonce.
type Chain interface {
	Authorization(ctx context.Context, asset, authorizer common.Address, nonce common.Hash) (AuthorizationState, error)
}

// RPC is a Chain read over Ethereum JSON-RPC (eth_call of
// authorizationState, eth_getLogs of the events), with go-ethereum's
// client: a node of the network the rail settles on, or `assay
// facilitator`'s /rpc, which answers the same calls from its simulated
// ledger.
type RPC struct {
	// URL is the JSON-RPC endpoint.
	URL string
	// Lookback is how many blocks back from the latest eth_getLogs
	// searches for the event that used a nonce; DefaultLookback when 0.
	Lookback uint64

	once   sync.Once
	client *ethclient.Client
	err    error
}

// DefaultLookback is about 2.3 days of Base blocks (2 s each): longer than
// any authorization the rail accepts stays valid.
const DefaultLookback = 100_000

// Interface guard.
var _ Chain = (*RPC)(nil)

func (c *RPC) dial(ctx context.Context) (*ethclient.Client, error) {
	c.once.Do(func() { c.client, c.err = ethclient.DialContext(ctx, c.URL) })
	return c.client, c.err
}

// Authorization implements Chain.
func (c *RPC) Authorization(ctx context.Context, asset, authorizer common.Address, nonce common.Hash) (AuthorizationState, error) {
	cl, err := c.dial(ctx)
	if err != nil {
		return AuthorizationState{}, fmt.Errorf("x402: chain %s: %w", c.URL, err)
	}
	data, err := eip3009.Pack("authorizationState", authorizer, [32]byte(nonce))
	if err != nil {
		return AuthorizationState{}, err
	}
	out, err := cl.CallContract(ctx, ethereum.CallMsg{To: &asset, Data: data}, nil)
	if err != nil {
		return AuthorizationState{}, fmt.Errorf("x402: chain %s: authorizationState: %w", c.URL, err)
	}
	vals, err := eip3009.Unpack("authorizationState", out)
	if err != nil || len(vals) != 1 {
		return AuthorizationState{}, fmt.Errorf("x402: chain %s: authorizationState answered %x", c.URL, out)
	}
	if used, _ := vals[0].(bool); !used {
		return AuthorizationState{State: AuthorizationUnused}, nil
	}
	latest, err := cl.BlockNumber(ctx)
	if err != nil {
		return AuthorizationState{}, fmt.Errorf("x402: chain %s: %w", c.URL, err)
	}
	back := c.Lookback
	if back == 0 {
		back = DefaultLookback
	}
	from := uint64(0)
	if latest > back {
		from = latest - back
	}
	logs, err := cl.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(from), Addresses: []common.Address{asset},
		Topics: [][]common.Hash{{topicUsed, topicCanceled}, {common.BytesToHash(authorizer.Bytes())}, {nonce}}})
	if err != nil {
		return AuthorizationState{}, fmt.Errorf("x402: chain %s: eth_getLogs: %w", c.URL, err)
	}
	for _, l := range logs {
		if l.Removed || len(l.Topics) == 0 {
			continue
		}
		switch l.Topics[0] {
		case topicUsed:
			return AuthorizationState{State: AuthorizationUsed, Transaction: l.TxHash.Hex()}, nil
		case topicCanceled:
			return AuthorizationState{State: AuthorizationCanceled}, nil
		}
	}
	return AuthorizationState{}, fmt.Errorf("x402: chain %s: the nonce %s of %s is used, and no event in the last %d blocks says by what", c.URL, nonce.Hex(), authorizer.Hex(), back)
}

// errNoChain is what the rail says when only the chain could tell.
var errNoChain = errors.New("only the chain can tell (serve with --x402-rpc)")

// chainService answers, for `assay facilitator`, the Ethereum JSON-RPC
// calls a Chain makes, from the facilitator's simulated ledger: each
// settlement is a block holding one AuthorizationUsed event. It is served
// at POST /rpc by go-ethereum's own JSON-RPC server.
type chainService struct {
	f       *Facilitator
	chainID int64
	asset   common.Address
}

func newChainRPC(f *Facilitator) (http.Handler, error) {
	id, err := ChainID(f.network)
	if err != nil {
		return nil, err
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("eth", &chainService{f: f, chainID: id, asset: common.HexToAddress(f.asset)}); err != nil {
		return nil, err
	}
	return srv, nil
}

// ChainId is eth_chainId.
func (c *chainService) ChainId() *hexutil.Big { return (*hexutil.Big)(big.NewInt(c.chainID)) }

// BlockNumber is eth_blockNumber: how many settlements the facilitator
// made.
func (c *chainService) BlockNumber(ctx context.Context) (hexutil.Uint64, error) {
	var n uint64
	err := c.f.st.View(ctx, func(tx store.Tx) error {
		if err := store.GetJSON(tx, keyBlock, &n); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	})
	return hexutil.Uint64(n), err
}

// callArgs are the fields of eth_call's transaction that matter here.
type callArgs struct {
	To    *common.Address `json:"to"`
	Input hexutil.Bytes   `json:"input"`
	Data  hexutil.Bytes   `json:"data"`
}

// Call is eth_call of the asset's authorizationState and balanceOf.
func (c *chainService) Call(ctx context.Context, args callArgs, _ *rpc.BlockNumberOrHash) (hexutil.Bytes, error) {
	data := args.Input
	if len(data) == 0 {
		data = args.Data
	}
	if args.To == nil || *args.To != c.asset || len(data) < 4 {
		return nil, errors.New("execution reverted: the local chain has one contract, the asset's")
	}
	m, err := eip3009.MethodById(data[:4])
	if err != nil {
		return nil, errors.New("execution reverted: the local chain's asset answers authorizationState and balanceOf")
	}
	in, err := m.Inputs.Unpack(data[4:])
	if err != nil {
		return nil, fmt.Errorf("execution reverted: %w", err)
	}
	var out []byte
	err = c.f.st.View(ctx, func(tx store.Tx) error {
		switch m.Name {
		case "authorizationState":
			who, nonce := in[0].(common.Address), in[1].([32]byte)
			_, err := tx.Get(nonceKeyOf("facilitator/nonce/", who, hexutil.Encode(nonce[:])))
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			out, err = m.Outputs.Pack(err == nil)
			return err
		default: // balanceOf
			bal, err := ledger.Balance(tx, AddressAccount(in[0].(common.Address).Hex()), Currency)
			if err != nil {
				return err
			}
			out, err = m.Outputs.Pack(big.NewInt(bal))
			return err
		}
	})
	return out, err
}

// filterArgs are eth_getLogs's criteria.
type filterArgs struct {
	FromBlock *rpc.BlockNumber `json:"fromBlock"`
	ToBlock   *rpc.BlockNumber `json:"toBlock"`
	Address   []common.Address `json:"address"`
	Topics    [][]common.Hash  `json:"topics"`
}

// GetLogs is eth_getLogs of AuthorizationUsed, for given authorizers and
// nonces: the event of the settlement that used each, if any.
func (c *chainService) GetLogs(ctx context.Context, q filterArgs) ([]types.Log, error) {
	if len(q.Address) > 0 && !slices.Contains(q.Address, c.asset) {
		return []types.Log{}, nil
	}
	if len(q.Topics) > 0 && len(q.Topics[0]) > 0 && !slices.Contains(q.Topics[0], topicUsed) {
		return []types.Log{}, nil // it has no other event
	}
	if len(q.Topics) < 3 || len(q.Topics[1]) == 0 || len(q.Topics[2]) == 0 {
		return nil, errors.New("the local chain answers eth_getLogs for given authorizers and nonces only")
	}
	latest, err := c.BlockNumber(ctx)
	if err != nil {
		return nil, err
	}
	lo, hi := uint64(0), uint64(latest)
	if q.FromBlock != nil && *q.FromBlock >= 0 {
		lo = uint64(*q.FromBlock)
	}
	if q.ToBlock != nil && *q.ToBlock >= 0 {
		hi = uint64(*q.ToBlock)
	}
	logs := []types.Log{}
	err = c.f.st.View(ctx, func(tx store.Tx) error {
		for _, who := range q.Topics[1] {
			for _, nonce := range q.Topics[2] {
				var used usedNonce
				err := store.GetJSON(tx, nonceKeyOf("facilitator/nonce/", common.BytesToAddress(who.Bytes()), nonce.Hex()), &used)
				if errors.Is(err, store.ErrNotFound) {
					continue
				} else if err != nil {
					return err
				}
				if used.Block < lo || used.Block > hi {
					continue
				}
				logs = append(logs, types.Log{Address: c.asset, Topics: []common.Hash{topicUsed, who, nonce}, Data: []byte{},
					BlockNumber: used.Block, TxHash: common.HexToHash(used.Transaction), BlockHash: crypto.Keccak256Hash([]byte(fmt.Sprint("block ", used.Block)))})
			}
		}
		return nil
	})
	return logs, err
}
