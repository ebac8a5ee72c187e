// Package gateway is the OpenClaw gateway client: endpoint resolution, the
// protocol-4 handshake with an optional signed device identity, framing, and errors
// that name the cause. The read side (discover/openclaw, read scope only) and the
// write side (launch) share it; it takes an endpoint and a version, not a
// discovery environment, so the write side does not depend on the read side.
package gateway

import (
	"context"
	"runtime/debug"
	"time"
)

// Scopes (docs/agents/openclaw.md §2.3): discovery reads; launch, resume, own stop and wait
// need write; stopping a run agentctl did not start needs admin.
const (
	ScopeRead  = "operator.read"
	ScopeWrite = "operator.write"
	ScopeAdmin = "operator.admin"
)

// Conn is one gateway connection, for the read side (discover/openclaw, read
// scope only) and the write side (launch/) alike: one handshake, one framing,
// one error wording, with the caller's scopes and device identity.
type Conn struct{ c *client }

// DialOptions are the inputs of Dial.
type DialOptions struct {
	Endpoint Endpoint // from Resolve
	// Version is sent as client.version in connect ("" = this build's version).
	Version    string
	Scopes     []string
	Methods    []string // checked against hello-ok's method list
	Device     *Device  // nil: token only
	DevicePath string   // for messages
}

// ClientVersion is this build's version as the gateway is told it.
func ClientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Dial completes the protocol-4 handshake with the endpoint, retrying a gateway
// that says it is still starting until ctx expires.
func Dial(ctx context.Context, o DialOptions) (*Conn, error) {
	var budget time.Duration
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	version := o.Version
	if version == "" {
		version = ClientVersion()
	}
	c, err := connect(ctx, connectOpts{ep: o.Endpoint, version: version, device: o.Device, devPath: o.DevicePath,
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

// ServerVersion is the gateway's own version (hello-ok.server.version).
func (c *Conn) ServerVersion() string { return c.c.hello.Server.Version }

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
