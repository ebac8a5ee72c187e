package main

import (
	"os"
	"strings"
	"testing"
)

// TestGeneratedUpToDate: the generated copies of Session's field list are what
// sessiongen writes from discover/session.go now. A field added, removed,
// renamed or retagged without `go generate ./...` fails here.
func TestGeneratedUpToDate(t *testing.T) {
	src, err := os.ReadFile("../../session.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		gen  func([]byte) ([]byte, error)
	}{{"../../../jsonsession_gen.go", genJSON}, {"../../session_pack_gen.go", genPack}} {
		want, err := c.gen(src)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		got, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run `go generate ./...` from the module root", c.path)
		}
	}
}

// TestUnknownFieldStops: a Session field of a type the hand-written encoders
// do not know stops the generator, naming it, instead of being left out.
func TestUnknownFieldStops(t *testing.T) {
	src, err := os.ReadFile("../../session.go")
	if err != nil {
		t.Fatal(err)
	}
	odd := strings.Replace(string(src), "type Session struct {\n", "type Session struct {\n\tWeights []float64 `json:\"weights,omitempty\"`\n", 1)
	if odd == string(src) {
		t.Fatal("premise: Session's declaration not found")
	}
	for name, gen := range map[string]func([]byte) ([]byte, error){"json": genJSON, "pack": genPack} {
		if _, err := gen([]byte(odd)); err == nil || !strings.Contains(err.Error(), "Session.Weights") {
			t.Errorf("%s: error %v, want one naming Session.Weights", name, err)
		}
	}
	tagged := strings.Replace(string(src), "\tGroup          string            `json:\"group,omitempty\"`", "\tGroup          string            `json:\"group,omitempty\" pack:\"inlined\"`", 1)
	if tagged == string(src) {
		t.Fatal("premise: Session.Group's declaration not found")
	}
	if _, err := genPack([]byte(tagged)); err == nil || !strings.Contains(err.Error(), "Session.Group") {
		t.Errorf("a misspelt pack tag: error %v, want one naming Session.Group", err)
	}
}
