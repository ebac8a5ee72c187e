package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/meta"
)

// A kept-open pi (`launch pi --keep-open`, docs/agents/pi.md §13) runs in RPC
// mode: JSON commands, one a line, on its stdin; responses and the session's
// events, one a line, on its stdout (the launch log). Its stdin is a FIFO
// under the state dir that the agent itself holds open for reading and
// writing, so it never sees EOF (which it takes as "shut down"); `agentctl
// send` writes later commands into the same FIFO.

// piStateID names the supervisor's get_state command, whose response is the
// launch's confirmation: RPC mode prints no session header.
const piStateID = "agentctl-launch-state"

// piStateData is the part of a get_state response agentctl reads.
type piStateData struct {
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile"`
}

// FirstInput asks for the session's state first (its id confirms the launch)
// and then sends the prompt: a "prompt" command, which starts a run.
func (Pi) FirstInput(prompt string) ([]byte, error) {
	state, err := json.Marshal(map[string]string{"id": piStateID, "type": "get_state"})
	if err != nil {
		return nil, err
	}
	cmd, err := piPromptLine("agentctl-launch-prompt", prompt)
	if err != nil {
		return nil, err
	}
	return append(append(state, '\n'), cmd...), nil
}

// piPromptLine is one RPC "prompt" command line carrying msg. When pi is idle it
// starts a run; during a run, streamingBehavior followUp queues it until the
// run is over (without it pi refuses a prompt while streaming): the same
// command as send.PiRPCLine, which send writes later.
func piPromptLine(id, msg string) ([]byte, error) {
	b, err := json.Marshal(struct {
		ID                string `json:"id"`
		Type              string `json:"type"`
		Message           string `json:"message"`
		StreamingBehavior string `json:"streamingBehavior"`
	}{id, "prompt", msg, "followUp"})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// piRPCConfirm takes the session id from the response to the supervisor's
// get_state.
func piRPCConfirm(lines [][]byte) (string, bool) {
	for _, ln := range lines {
		e, ok := parsePiEvent(ln)
		if ok && e.Type == "response" && e.ID == piStateID && e.Data != nil && e.Data.SessionID != "" {
			return e.Data.SessionID, true
		}
	}
	return "", false
}

// InputPath is where launch id's input FIFO lives: under the state dir's
// inputs/ (0700), one 0600 FIFO per kept-open launch.
func (d *Deps) InputPath(id string) string {
	return filepath.Join(d.Store.Dir, "inputs", id)
}

// openInput makes the FIFO of a kept-open launch and opens it for reading and
// writing: the agent gets it as its stdin and, holding a writer itself, never
// reads EOF. A file already at path is never reused (O_EXCL-like: Mkfifo
// fails on it).
func openInput(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, &os.PathError{Op: "mkfifo", Path: path, Err: err}
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// removeInput removes a finished launch's FIFO (only a FIFO: whatever else
// sits at that path is left alone).
func removeInput(path string) {
	if path == "" {
		return
	}
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		_ = os.Remove(path)
	}
}

// keepOpenAllowed refuses --keep-open where it cannot work, naming the
// agents where it does.
func keepOpenAllowed(sp *Spec, drv Driver) error {
	_, keeper := drv.(Keeper)
	if !agents.Get(sp.Adapter).KeepOpen || !keeper {
		var can []string
		for _, a := range agents.All() {
			if a.KeepOpen {
				can = append(can, a.Name)
			}
		}
		return &InputError{fmt.Sprintf("--keep-open: agentctl cannot keep a %s run open for messages (it can for: %s); "+
			"launch it without --keep-open and continue it with agentctl resume ID MESSAGE", sp.Adapter, strings.Join(can, ", "))}
	}
	if sp.Kind == KindResume {
		return &InputError{"--keep-open applies to launch only; continue a session with agentctl resume ID MESSAGE"}
	}
	return nil
}

// openKeptInput reads the prompt (and closes its file), makes the launch's
// input FIFO and returns it with the first commands to write into it.
func openKeptInput(drv Driver, path string, prompt *os.File) (*os.File, []byte, error) {
	keeper, ok := drv.(Keeper)
	if !ok {
		return nil, nil, fmt.Errorf("%s cannot be kept open for messages", drv.Name())
	}
	var text []byte
	if prompt != nil {
		b, err := io.ReadAll(prompt)
		prompt.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read the prompt: %w", err)
		}
		text = b
	}
	first, err := keeper.FirstInput(string(text))
	if err != nil {
		return nil, nil, err
	}
	f, err := openInput(path)
	if err != nil {
		return nil, nil, fmt.Errorf("make the agent's input: %w", err)
	}
	return f, first, nil
}

// SweepInputs removes the input FIFOs under the state dir's inputs/ that no
// live run reads any more (sweep calls it; finalising a run removes its own):
// the record is gone (expired), finalised, or its agent, once known, is no
// longer the process it was (PID, start time and boot id). A run still
// starting (no PID yet) keeps its FIFO. It returns how many went.
func (d *Deps) SweepInputs() (int, error) {
	dir := filepath.Join(d.Store.Dir, "inputs")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	recs, err := d.Store.ReadLaunches()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ent := range ents {
		if ent.Type()&os.ModeNamedPipe == 0 {
			continue
		}
		path := filepath.Join(dir, ent.Name())
		r := meta.FindLaunch(recs, ent.Name())
		if r != nil && r.Input == path && r.FinalisedAt == nil && (r.PID == 0 || d.Store.AgentAlive(r)) {
			continue
		}
		if err := os.Remove(path); err == nil {
			n++
		}
	}
	return n, nil
}
