package opencode

import (
	"encoding/json"
)

// msgData is a message's JSON: the SQLite `data` column (ids are columns there) or
// a legacy storage/message file (ids inside).
type msgData struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Role      string `json:"role"`
	ParentID  string `json:"parentID"`
	Time      struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Finish     string     `json:"finish"`
	Error      *errorData `json:"error"`
	ProviderID string     `json:"providerID"`
	ModelID    string     `json:"modelID"`
	Model      struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
	} `json:"model"`
	Tokens *msgTokens `json:"tokens"`
	Cost   *float64   `json:"cost"`
}

// msgTokens is an assistant message's tokens{}.
type msgTokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

type errorData struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// message is data.message when it is a string ("" otherwise).
func (e *errorData) message() string {
	var d struct {
		Message json.RawMessage `json:"message"`
	}
	if e == nil || json.Unmarshal(e.Data, &d) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(d.Message, &s) != nil {
		return ""
	}
	return s
}

func (m *msgData) last() lastMessage {
	l := lastMessage{ID: m.ID, Role: m.Role, Created: m.Time.Created, Completed: m.Time.Completed, Finish: m.Finish,
		Provider: m.ProviderID, ModelID: m.ModelID}
	if l.Provider == "" && l.ModelID == "" {
		l.Provider, l.ModelID = m.Model.ProviderID, m.Model.ModelID
	}
	if m.Error != nil {
		l.ErrName, l.ErrMsg = m.Error.Name, m.Error.message()
		if len(l.ErrMsg) > 500 {
			l.ErrMsg = l.ErrMsg[:500]
		}
	}
	return l
}

// partData is a part's JSON; which fields are set depends on Type.
type partData struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	// tool
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	} `json:"state"`
	// file / patch
	Filename string   `json:"filename"`
	URL      string   `json:"url"`
	Files    []string `json:"files"`
	// subtask / agent
	Agent       string `json:"agent"`
	Name        string `json:"name"`
	Description string `json:"description"`
}
