package openclaw

import (
	"context"
	"time"

	"github.com/agentctl/agentctl/discover"
)

// Scopes the write side asks for (docs/agents/openclaw.md §2.3): launch, resume, own stop
// and wait need write; stopping a run agentctl did not start needs admin.
const (
	ScopeRead  = scopeRead
	ScopeWrite = "operator.write"
	ScopeAdmin = "operator.admin"
)

// Conn is one gateway connection for agentctl's write side (launch/): the same
// handshake, framing and error wording as discovery, with the caller's scopes
// and device identity. The read side never sends write RPCs.
type Conn struct{ c *client }

// DialOptions are the inputs of Dial.
type DialOptions struct {
	// Env resolves the endpoint exactly as discovery does (config, OPENCLAW_*
	// variables, OpenClaw's own config file).
	Env        *discover.Env
	Scopes     []string
	Methods    []string // checked against hello-ok's method list
	Device     *Device  // nil: token only
	DevicePath string   // for messages
}

// Dial resolves the endpoint and completes the protocol-4 handshake.
func Dial(ctx context.Context, o DialOptions) (*Conn, error) {
	ep, err := resolveEndpoint(o.Env, DefaultURL)
	if err != nil {
		return nil, err
	}
	var budget time.Duration
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	c, err := connect(ctx, connectOpts{ep: ep, version: buildVersion(), device: o.Device, devPath: o.DevicePath,
		scopes: o.Scopes, methods: o.Methods, budget: budget})
	if err != nil {
		return nil, err
	}
	return &Conn{c: c}, nil
}

// Call sends one request and decodes its result into out.
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	return c.c.call(ctx, method, params, out)
}

// URL is the gateway's URL.
func (c *Conn) URL() string { return c.c.ep.url }

// Scopes are the scopes the gateway granted (hello-ok.auth.scopes).
func (c *Conn) Scopes() []string { return c.c.hello.Auth.Scopes }

// Close ends the connection politely.
func (c *Conn) Close(ctx context.Context) { c.c.close(ctx) }

// Abort drops the connection (error paths).
func (c *Conn) Abort() { c.c.abort() }

// LoadDevice reads agentctl's device identity from its state dir; ok is false
// when there is none yet.
func LoadDevice(stateDir string) (d Device, path string, ok bool, err error) {
	return readDevice(stateDir)
}
