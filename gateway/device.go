package gateway

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DeviceFile is agentctl's OpenClaw device identity, in agentctl's state dir
// ($AGENTCTL_HOME). The write side creates it (0600) the first time it needs one
// and never regenerates it: the gateway binds run ownership to it (docs/agents/openclaw.md
// docs/agents/openclaw.md §2.3, §6.3). Discovery only reads it.
const DeviceFile = "openclaw-device.json"

// deviceFileSchema is the only file format this code reads.
const deviceFileSchema = 1

// Device is an Ed25519 device identity as the gateway knows it.
type Device struct {
	ID  string // lowercase hex SHA-256 of the raw public key
	Key ed25519.PrivateKey
}

// deviceJSON is the file: private_key is the 32-byte Ed25519 seed, base64url
// without padding (the 64-byte seed+public form is accepted too).
type deviceJSON struct {
	Schema     int    `json:"schema"`
	DeviceID   string `json:"device_id"`
	PrivateKey string `json:"private_key"`
}

// NewDevice wraps a private key as a Device.
func NewDevice(key ed25519.PrivateKey) Device {
	pub := key.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return Device{ID: hex.EncodeToString(sum[:]), Key: key}
}

// EncodeDevice returns the file body for d (the write side stores it with 0600).
func EncodeDevice(d Device) ([]byte, error) {
	b, err := json.MarshalIndent(deviceJSON{
		Schema:     deviceFileSchema,
		DeviceID:   d.ID,
		PrivateKey: base64.RawURLEncoding.EncodeToString(d.Key.Seed()),
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseDevice decodes a device file and checks that its id matches its key.
func ParseDevice(b []byte) (Device, error) {
	var f deviceJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return Device{}, err
	}
	if f.Schema != deviceFileSchema {
		return Device{}, fmt.Errorf("schema %d, want %d", f.Schema, deviceFileSchema)
	}
	raw, err := decodeB64(f.PrivateKey)
	if err != nil {
		return Device{}, fmt.Errorf("private_key: %v", err)
	}
	var key ed25519.PrivateKey
	switch len(raw) {
	case ed25519.SeedSize:
		key = ed25519.NewKeyFromSeed(raw)
	case ed25519.PrivateKeySize:
		key = ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !key.Equal(ed25519.PrivateKey(raw)) {
			return Device{}, errors.New("private_key: public half does not match the seed")
		}
	default:
		return Device{}, fmt.Errorf("private_key: %d bytes, want a %d-byte Ed25519 seed", len(raw), ed25519.SeedSize)
	}
	d := NewDevice(key)
	if !strings.EqualFold(f.DeviceID, d.ID) {
		return Device{}, fmt.Errorf("device_id %q does not match private_key (want %s)", f.DeviceID, d.ID)
	}
	return d, nil
}

func decodeB64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if strings.ContainsAny(s, "+/") {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// readDevice loads the identity from stateDir; ok is false when there is none.
func readDevice(stateDir string) (d Device, path string, ok bool, err error) {
	if stateDir == "" {
		return Device{}, "", false, nil
	}
	path = filepath.Join(stateDir, DeviceFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Device{}, path, false, nil
	}
	if err != nil {
		return Device{}, path, false, fmt.Errorf("read %s: %w", path, err)
	}
	d, err = ParseDevice(b)
	if err != nil {
		return Device{}, path, false, fmt.Errorf("%s: %v", path, err)
	}
	return d, path, true, nil
}

// PublicKey is the raw public key, base64url without padding.
func (d Device) PublicKey() string {
	return base64.RawURLEncoding.EncodeToString(d.Key.Public().(ed25519.PublicKey))
}

// Sign signs the v3 connect payload (docs/agents/openclaw.md §2.3):
// v3|id|client.id|client.mode|role|scopes|signedAt|token|nonce|platform|deviceFamily
// with deviceFamily empty because agentctl does not send one.
func (d Device) Sign(p SignPayload) string {
	return base64.RawURLEncoding.EncodeToString(ed25519.Sign(d.Key, []byte(p.String(d.ID))))
}

// SignPayload is what a device signature covers.
type SignPayload struct {
	ClientID, ClientMode, Role string
	Scopes                     []string
	SignedAt                   string // the challenge ts, verbatim
	Token, Nonce, Platform     string
}

// String is the exact signed text.
func (p SignPayload) String(deviceID string) string {
	return strings.Join([]string{"v3", deviceID, p.ClientID, p.ClientMode, p.Role,
		strings.Join(p.Scopes, ","), p.SignedAt, p.Token, p.Nonce, strings.ToLower(p.Platform), ""}, "|")
}
