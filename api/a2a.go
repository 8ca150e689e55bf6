package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/principal"
)

// A2APath is the A2A v1.0 JSON-RPC endpoint the Agent Card names. It
// runs one task: a dispute. SendMessage with a data part {contract_id,
// reason} disputes a delivered contract as the buyer, through the
// dispute row of the route table (its rule, its idempotency, the court's
// party check on the actor of the HTTP request), and answers a task
// whose artifact is the signed verdict receipt; the message's messageId
// is the idempotency key, so a retried message answers the same task.
// GetTask reads a dispute's task back from its contract.
const A2APath = "/a2a"

// The A2A errors this endpoint answers (A2A v1.0, JSON-RPC binding).
const (
	a2aTaskNotFound         = -32001
	a2aUnsupportedOperation = -32004
)

// disputeRow is the route a dispute task runs.
const disputeRow = "POST /contracts/{id}/dispute"

// disputeTaskPrefix makes a task id of a contract id: one dispute per
// contract, so one task.
const disputeTaskPrefix = "dispute-"

// a2aEndpoint answers one JSON-RPC request: SendMessage and GetTask;
// every other A2A method is an UnsupportedOperationError, anything else
// method not found.
func (s *server) a2aEndpoint(c *fiber.Ctx, a principal.Actor) error {
	msg, err := jsonrpc.DecodeMessage(c.Body())
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() {
		// Bad input, as on every route: a coded 400 that changes nothing.
		return writeError(c, http.StatusBadRequest, codeInvalidRequest, "a2a: the body must be one JSON-RPC 2.0 request (SendMessage or GetTask)")
	}
	ctx := context.WithValue(c.UserContext(), actorKey{}, a)
	var res any
	var jerr *jsonrpc.Error
	switch req.Method {
	case "SendMessage":
		res, jerr = s.a2aSend(ctx, req.Params)
	case "GetTask":
		res, jerr = s.a2aGet(ctx, req.Params)
	case "SendStreamingMessage", "CancelTask", "ListTasks", "SubscribeToTask", "GetExtendedAgentCard",
		"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		jerr = &jsonrpc.Error{Code: a2aUnsupportedOperation, Message: req.Method + " is not offered: this agent runs a dispute as one synchronous task (SendMessage, GetTask)"}
	default:
		jerr = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method " + strings.ToValidUTF8(req.Method, "?") + " is not an A2A method of this agent (SendMessage, GetTask)"}
	}
	return s.a2aReply(c, req.ID, res, jerr)
}

func (s *server) a2aReply(c *fiber.Ctx, id jsonrpc.ID, res any, jerr *jsonrpc.Error) error {
	out := &jsonrpc.Response{ID: id}
	if jerr != nil {
		out.Error = jerr
	} else {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		out.Result = b
	}
	b, err := jsonrpc.EncodeMessage(out)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(http.StatusOK).Send(b)
}

// a2aPart is a Part of A2A v1.0 as this endpoint reads and writes it.
type a2aPart struct {
	Text      string          `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type a2aMessage struct {
	MessageID string    `json:"messageId"`
	ContextID string    `json:"contextId,omitempty"`
	TaskID    string    `json:"taskId,omitempty"`
	Role      string    `json:"role"`
	Parts     []a2aPart `json:"parts"`
}

type a2aTask struct {
	ID        string        `json:"id"`
	ContextID string        `json:"contextId"`
	Status    a2aStatus     `json:"status"`
	Artifacts []a2aArtifact `json:"artifacts,omitempty"`
}

type a2aStatus struct {
	State   string      `json:"state"`
	Message *a2aMessage `json:"message,omitempty"`
}

type a2aArtifact struct {
	ArtifactID string    `json:"artifactId"`
	Name       string    `json:"name"`
	Parts      []a2aPart `json:"parts"`
}

// disputeArgs is what a dispute message's data part holds.
type disputeArgs struct {
	ContractID string `json:"contract_id"`
	Reason     string `json:"reason,omitempty"`
}

func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// a2aSend runs a SendMessage: the dispute its data part asks for, as the
// dispute tool runs it.
func (s *server) a2aSend(ctx context.Context, params json.RawMessage) (any, *jsonrpc.Error) {
	var p struct {
		Message *a2aMessage `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil || p.Message == nil {
		return nil, invalidParams("SendMessage takes {message: {messageId, role, parts}}")
	}
	m := p.Message
	if m.MessageID == "" {
		return nil, invalidParams("message.messageId is required: it is the dispute's idempotency key")
	}
	var args *disputeArgs
	for _, part := range m.Parts {
		if len(part.Data) == 0 {
			continue
		}
		var d disputeArgs
		dec := json.NewDecoder(strings.NewReader(string(part.Data)))
		dec.DisallowUnknownFields()
		if dec.Decode(&d) != nil || d.ContractID == "" {
			return nil, invalidParams(`the data part must be {"contract_id": "esc-…", "reason": "…"}`)
		}
		args = &d
	}
	if args == nil {
		return nil, invalidParams(`send a data part {"contract_id": "esc-…", "reason": "…"}: this agent runs disputes`)
	}
	r := s.routes.byKey[disputeRow]
	if r == nil || r.tool == nil {
		return nil, &jsonrpc.Error{Code: a2aUnsupportedOperation, Message: "this server runs no court"}
	}
	call := map[string]string{"contract_id": args.ContractID, "idempotency_key": m.MessageID}
	if args.Reason != "" {
		call["reason"] = args.Reason
	}
	in, err := json.Marshal(call)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	body, err := s.callTool(ctx, r, in)
	task := a2aTask{ID: disputeTaskPrefix + args.ContractID, ContextID: args.ContractID}
	if err != nil {
		if fault.KindOf(err) == fault.Internal {
			s.cfg.Logger.Error("internal error", "a2a", "SendMessage", "err", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
		// A refusal is the task's end: rejected, with the REST error body.
		refusal, _ := json.Marshal(errorBody{Detail: fault.MessageOf(err), Error: errorCode{Code: fault.CodeOf(err), Message: fault.MessageOf(err)}})
		task.Status = a2aStatus{State: "TASK_STATE_REJECTED", Message: agentMessage(m.MessageID+"-refused", args.ContractID, task.ID, refusal)}
		return map[string]any{"task": task}, nil
	}
	s.disputeTask(ctx, &task, body)
	return map[string]any{"task": task}, nil
}

// agentMessage is a message of this agent holding one JSON part.
func agentMessage(id, contextID, taskID string, data json.RawMessage) *a2aMessage {
	return &a2aMessage{MessageID: id, ContextID: contextID, TaskID: taskID, Role: "ROLE_AGENT",
		Parts: []a2aPart{{Data: data, MediaType: "application/json"}}}
}

// disputeTask fills a dispute's task from its verdict receipt: completed
// with the receipt as its artifact, or working while an operator decides
// an escalated dispute.
func (s *server) disputeTask(ctx context.Context, t *a2aTask, rc json.RawMessage) {
	var head struct {
		ID      string `json:"id"`
		Subject struct {
			Verdict string `json:"verdict"`
		} `json:"credentialSubject"`
	}
	_ = json.Unmarshal(rc, &head)
	t.Status.State = "TASK_STATE_COMPLETED"
	if c, err := s.cfg.Court.Get(ctx, t.ContextID); err == nil && c.Status == escrow.StatusEscalated {
		t.Status.State = "TASK_STATE_WORKING"
	}
	t.Artifacts = []a2aArtifact{{ArtifactID: head.ID, Name: "verdict receipt",
		Parts: []a2aPart{{Data: rc, MediaType: "application/json"}}}}
}

// a2aGet answers GetTask: a disputed contract's task, read from the
// contract and its last receipt.
func (s *server) a2aGet(ctx context.Context, params json.RawMessage) (any, *jsonrpc.Error) {
	var p struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(params, &p) != nil || p.ID == "" {
		return nil, invalidParams("GetTask takes {id}")
	}
	notFound := &jsonrpc.Error{Code: a2aTaskNotFound, Message: "no dispute task " + strings.ToValidUTF8(p.ID, "?")}
	id, ok := strings.CutPrefix(p.ID, disputeTaskPrefix)
	if !ok || s.cfg.Court == nil {
		return nil, notFound
	}
	c, err := s.cfg.Court.Get(ctx, id)
	if err != nil || len(c.Receipts) == 0 || (c.Status != escrow.StatusResolved && c.Status != escrow.StatusEscalated) {
		return nil, notFound
	}
	rc, err := s.cfg.Court.SignedReceipt(ctx, c.Receipts[len(c.Receipts)-1])
	if err != nil {
		return nil, notFound
	}
	var tier struct {
		Subject struct {
			Tier string `json:"tier"`
		} `json:"credentialSubject"`
	}
	if json.Unmarshal(rc, &tier) == nil && tier.Subject.Tier == escrow.TierBuyerAccept {
		return nil, notFound // accepted, never disputed
	}
	t := a2aTask{ID: p.ID, ContextID: id}
	s.disputeTask(ctx, &t, rc)
	return t, nil
}
