package gateway

import (
	"crypto/ed25519"
	"encoding/base64"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentctl/agentctl/meta"
)

// testSettings is what Resolve reads, over a temporary home, with warnings kept.
type testSettings struct {
	Settings
	warns *[]string
}

func (s testSettings) warnings() []string { return *s.warns }

func newEnv(t *testing.T, vars map[string]string) testSettings {
	t.Helper()
	var warns []string
	return testSettings{
		Settings: Settings{Home: t.TempDir(), Getenv: func(k string) string { return vars[k] },
			Warn: func(m string) { warns = append(warns, m) }},
		warns: &warns,
	}
}

func TestResolveEndpoint(t *testing.T) {
	type want struct {
		URL, URLSource, Token, TokenSource, Password string
		Configured                                   bool
	}
	cfg := func(url, token string, env map[string]string) *meta.Config {
		return &meta.Config{Adapters: map[string]meta.AdapterConfig{adapterName: {URL: url, Token: token, Env: env}}}
	}
	tests := []struct {
		name string
		vars map[string]string
		cfg  *meta.Config
		want want
	}{
		{"nothing", nil, nil, want{URL: DefaultURL, URLSource: "default"}},
		{"env url and token", map[string]string{"OPENCLAW_GATEWAY_URL": "http://gw:1", "OPENCLAW_GATEWAY_TOKEN": "t1", "OPENCLAW_WEBHOOK_TOKEN": "t2"}, nil,
			want{URL: "ws://gw:1", URLSource: "OPENCLAW_GATEWAY_URL", Token: "t1", TokenSource: "OPENCLAW_GATEWAY_TOKEN", Configured: true}},
		{"config url wins over env", map[string]string{"OPENCLAW_GATEWAY_URL": "ws://env:1", "OPENCLAW_WEBHOOK_TOKEN": "t2"}, cfg("https://cfg:2", "t3", nil),
			want{URL: "wss://cfg:2", URLSource: "config adapters.openclaw.url", Token: "t2", TokenSource: "OPENCLAW_WEBHOOK_TOKEN", Configured: true}},
		{"port", map[string]string{"OPENCLAW_GATEWAY_PORT": "19001"}, cfg("", "t3", map[string]string{"OPENCLAW_GATEWAY_TOKEN": "t4"}),
			want{URL: "ws://127.0.0.1:19001", URLSource: "OPENCLAW_GATEWAY_PORT", Token: "t3", TokenSource: "config adapters.openclaw.token", Configured: true}},
		{"config env token and password", nil, cfg("", "", map[string]string{"OPENCLAW_GATEWAY_TOKEN": "t4", "OPENCLAW_GATEWAY_PASSWORD": "pw"}),
			want{URL: DefaultURL, URLSource: "default", Token: "t4", TokenSource: "config adapters.openclaw.env.OPENCLAW_GATEWAY_TOKEN", Password: "pw", Configured: true}},
		{"password only", map[string]string{"OPENCLAW_GATEWAY_PASSWORD": "pw"}, nil, want{URL: DefaultURL, URLSource: "default", Password: "pw", Configured: true}},
	}
	for _, tt := range tests {
		env := newEnv(t, tt.vars)
		env.Config = tt.cfg
		ep, err := Resolve(env.Settings, DefaultURL)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := want{ep.url, ep.urlSource, ep.token, ep.tokenSource, ep.password, ep.configured}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}

	for _, bad := range []map[string]string{{"OPENCLAW_GATEWAY_PORT": "x"}, {"OPENCLAW_GATEWAY_URL": "ftp://h"}, {"OPENCLAW_GATEWAY_URL": "ws://"}} {
		if _, err := Resolve(newEnv(t, bad).Settings, DefaultURL); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestOpenClawConfigToken(t *testing.T) {
	const conf = `// OpenClaw config (JSON5)
{
  gateway: {
    mode: 'local', port: 19002, bind: "loopback",
    /* the shared secret */
    auth: { mode: "token", token: "from-file", },
  },
  agents: { defaults: { model: { primary: "fakeoai/fake-model" } } },
}
`
	env := newEnv(t, nil)
	dir := filepath.Join(env.Home, ".openclaw")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, err := Resolve(env.Settings, DefaultURL)
	if err != nil {
		t.Fatal(err)
	}
	if ep.token != "from-file" || ep.tokenSource != path+" gateway.auth.token" || ep.url != "ws://127.0.0.1:19002" || !ep.configured {
		t.Errorf("%+v", ep)
	}

	// A secret reference is not a token; OPENCLAW_CONFIG_PATH moves the file.
	other := filepath.Join(t.TempDir(), "oc.json5")
	if err := os.WriteFile(other, []byte(`{gateway:{auth:{token:{source:"env",id:"X"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env = newEnv(t, map[string]string{"OPENCLAW_CONFIG_PATH": other})
	ep, err = Resolve(env.Settings, DefaultURL)
	if err != nil || ep.token != "" || ep.configured || ep.url != DefaultURL {
		t.Errorf("secret ref: %+v %v", ep, err)
	}

	// A file that does not parse is a warning, not a failure.
	if err := os.WriteFile(other, []byte(`{gateway:`), 0o600); err != nil {
		t.Fatal(err)
	}
	ep, err = Resolve(env.Settings, DefaultURL)
	if err != nil || ep.configured || len(env.warnings()) != 1 {
		t.Errorf("broken file: %+v %v %q", ep, err, env.warnings())
	}
}

func TestJSON5(t *testing.T) {
	v, err := parseJSON5("\ufeff" + `{
  // comment
  unquoted: 'single \'q\' \x41\u00e9',
  "quoted": "line\
cont",
  $id_1: [1, +2, -3.5, .5, 5., 0x1F, 1e3, Infinity, -Infinity, null, true, false,],
  nested: {a: {b: "c"}}, /* trailing */
}`)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	arr := m["$id_1"].([]any)
	if m["unquoted"] != "single 'q' Aé" || m["quoted"] != "linecont" || len(arr) != 12 ||
		arr[1] != 2.0 || arr[2] != -3.5 || arr[3] != 0.5 || arr[4] != 5.0 || arr[5] != 31.0 || arr[6] != 1000.0 ||
		!math.IsInf(arr[7].(float64), 1) || !math.IsInf(arr[8].(float64), -1) || arr[9] != nil || arr[10] != true {
		t.Errorf("%#v", m)
	}
	for _, bad := range []string{`{a:}`, `{a:1`, `[1 2]`, `"open`, `{a:1}}`, `/* x`, `{'a' 1}`} {
		if _, err := parseJSON5(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestDeviceFileRoundTrip(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	d := NewDevice(ed25519.NewKeyFromSeed(seed))
	b, err := EncodeDevice(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDevice(b)
	if err != nil || got.ID != d.ID || !got.Key.Equal(d.Key) {
		t.Fatalf("%v %v", got, err)
	}
	if len(d.ID) != 64 {
		t.Errorf("id %q", d.ID)
	}
	key := base64.RawURLEncoding.EncodeToString(seed)
	if _, err := ParseDevice([]byte(`{"schema":1,"device_id":"` + d.ID + `","private_key":"` + key + `"}`)); err != nil {
		t.Errorf("hand-written file: %v", err)
	}
	if _, err := ParseDevice([]byte(`{"schema":1,"device_id":"00","private_key":"` + key + `"}`)); err == nil {
		t.Errorf("mismatched id accepted")
	}
	p := SignPayload{ClientID: "cli", ClientMode: "cli", Role: "operator", Scopes: []string{"operator.read", "operator.write"},
		SignedAt: "1795212360620", Token: "tok", Nonce: "n-1", Platform: "Linux"}
	want := "v3|" + d.ID + "|cli|cli|operator|operator.read,operator.write|1795212360620|tok|n-1|linux|"
	if s := p.String(d.ID); s != want {
		t.Errorf("payload %q, want %q", s, want)
	}
}
