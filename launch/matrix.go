package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// Matrix is a `launch --matrix FILE` (README "Comparing agents"). Unknown keys
// are errors.
type Matrix struct {
	Prompt     string        `yaml:"prompt"`
	Cwd        string        `yaml:"cwd"`
	BaseBranch string        `yaml:"base_branch"`
	Matrix     []MatrixEntry `yaml:"matrix"`
}

// MatrixEntry is one adapter of a matrix; a list of models expands to one slot
// per model.
type MatrixEntry struct {
	Adapter string     `yaml:"adapter"`
	Model   ModelNames `yaml:"model"`
	// The slot's budget (launch --max-duration, --max-cost, --max-tokens); the
	// flags and config fill in what it leaves unset.
	MaxDuration string `yaml:"max_duration"`
	MaxCost     string `yaml:"max_cost"`
	MaxTokens   string `yaml:"max_tokens"`
	// Background: claude-code only, the slot runs as a Claude Code background
	// session (launch --background).
	Background bool `yaml:"background"`
}

// ModelNames is a model name or a list of them.
type ModelNames []string

// UnmarshalYAML accepts a scalar or a sequence of scalars.
func (m *ModelNames) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil
		}
		*m = ModelNames{n.Value}
		return nil
	case yaml.SequenceNode:
		var out ModelNames
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || c.Value == "" {
				return fmt.Errorf("line %d: model: want a model name or a list of names", c.Line)
			}
			out = append(out, c.Value)
		}
		*m = out
		return nil
	}
	return fmt.Errorf("line %d: model: want a model name or a list of names", n.Line)
}

var unknownFieldRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`) })

// ReadMatrix reads and checks a matrix file. Relative cwd resolves against the
// file's directory (after ~ expansion by expand, which may be nil).
func ReadMatrix(path string, expand func(string) string) (*Matrix, []Slot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &InputError{fmt.Sprintf("--matrix: %v", err)}
	}
	bad := func(format string, a ...any) error {
		return &InputError{fmt.Sprintf("--matrix %s: ", path) + fmt.Sprintf(format, a...)}
	}
	var m Matrix
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, bad("empty file; want prompt, cwd, base_branch and a matrix list of {adapter, model}")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg := te.Errors[0]
			if sm := unknownFieldRe().FindStringSubmatch(msg); sm != nil {
				return nil, nil, bad("line %s: unknown key %q (known: prompt, cwd, base_branch, matrix; in matrix entries: adapter, model, max_duration, max_cost, max_tokens, background)", sm[1], sm[2])
			}
			return nil, nil, bad("%s", strings.TrimPrefix(msg, "yaml: "))
		}
		return nil, nil, bad("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(m.Matrix) == 0 {
		return nil, nil, bad("the matrix list is empty; add at least one `- adapter: NAME`")
	}
	var slots []Slot
	for i, e := range m.Matrix {
		if e.Adapter == "" {
			return nil, nil, bad("matrix entry %d has no adapter", i+1)
		}
		if e.Background && !agents.Get(e.Adapter).Background {
			return nil, nil, bad("matrix entry %d: background: true is for claude-code (Claude Code's own background sessions), not %s", i+1, e.Adapter)
		}
		b, err := meta.ParseBudget(e.MaxDuration, e.MaxCost, e.MaxTokens)
		if err != nil {
			return nil, nil, bad("matrix entry %d: %s", i+1, strings.Replace(strings.TrimPrefix(err.Error(), "--"), "-", "_", 1))
		}
		var budget *meta.Budget
		if !b.Empty() {
			budget = &b
		}
		if len(e.Model) == 0 {
			slots = append(slots, Slot{Adapter: e.Adapter, Budget: budget, Background: e.Background})
		}
		for _, model := range e.Model {
			slots = append(slots, Slot{Adapter: e.Adapter, Model: model, Budget: budget, Background: e.Background})
		}
	}
	if m.Cwd != "" {
		if expand != nil {
			m.Cwd = expand(m.Cwd)
		}
		if !filepath.IsAbs(m.Cwd) {
			dir, _ := filepath.Abs(filepath.Dir(path))
			m.Cwd = filepath.Join(dir, m.Cwd)
		}
	}
	return &m, slots, nil
}
