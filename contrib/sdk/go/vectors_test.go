package lodge

// vectors.encode and vectors.decode: the messages of tests/sdk/vectors.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

type vectorFile struct {
	Type      string `json:"type"`
	Direction string `json:"direction"`
	Vectors   []struct {
		Name      string          `json:"name"`
		Canonical bool            `json:"canonical"`
		Message   json.RawMessage `json:"message"`
		Hex       string          `json:"hex"`
	} `json:"vectors"`
}

// orderedMap keeps a JSON object's keys in order.
type orderedMap struct {
	keys []string
	vals map[string]json.RawMessage
}

func (m *orderedMap) UnmarshalJSON(b []byte) error {
	m.vals = map[string]json.RawMessage{}
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		return err
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return err
		}
		m.keys = append(m.keys, k.(string))
		m.vals[k.(string)] = v
	}
	return nil
}

func binOf(t *testing.T, raw json.RawMessage) []byte {
	var b struct{ Bin string }
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	out, err := hex.DecodeString(b.Bin)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// encodeVector builds a client message with the SDK's own encoder.
func encodeVector(t *testing.T, raw json.RawMessage) []byte {
	var m orderedMap
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var typ string
	_ = json.Unmarshal(m.vals["type"], &typ)
	num := func(k string) int { var n int; _ = json.Unmarshal(m.vals[k], &n); return n }
	str := func(k string) string { var s string; _ = json.Unmarshal(m.vals[k], &s); return s }
	switch typ {
	case "stdin":
		return encodeStdin(binOf(t, m.vals["data"]))
	case "eof":
		return encodeType("eof")
	case "resize":
		return encodeResize(num("cols"), num("rows"))
	case "signal":
		var n int
		if json.Unmarshal(m.vals["signal"], &n) == nil {
			return signalMessage(fmt.Sprint(n))
		}
		return signalMessage(str("signal"))
	case "start":
		f := startFields{Command: str("command"), WorkDir: str("workDir"), User: str("user"),
			Cols: num("cols"), Rows: num("rows")}
		if v, ok := m.vals["args"]; ok {
			_ = json.Unmarshal(v, &f.Args)
		}
		if v, ok := m.vals["env"]; ok {
			var env orderedMap
			_ = json.Unmarshal(v, &env)
			f.Env = []envVar{}
			for _, k := range env.keys {
				var s string
				_ = json.Unmarshal(env.vals[k], &s)
				f.Env = append(f.Env, envVar{k, s})
			}
		}
		if v, ok := m.vals["timeoutSeconds"]; ok {
			_ = json.Unmarshal(v, &f.TimeoutSeconds)
		}
		if v, ok := m.vals["tty"]; ok {
			var b bool
			_ = json.Unmarshal(v, &b)
			f.TTY = &b
		}
		return encodeStart(f)
	}
	t.Fatalf("no encoder for %s", typ)
	return nil
}

func loadVectors(t *testing.T) map[string]vectorFile {
	files, _ := filepath.Glob("../../../tests/sdk/vectors/*.json")
	if len(files) == 0 {
		t.Fatal("no vectors in tests/sdk/vectors")
	}
	out := map[string]vectorFile{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vectorFile
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(f, err)
		}
		out[filepath.Base(f)] = v
	}
	return out
}

func TestVectors(t *testing.T) {
	all := loadVectors(t)
	t.Run("vectors.encode", func(t *testing.T) {
		n := 0
		for file, vf := range all {
			if vf.Direction != "client" {
				continue
			}
			for _, v := range vf.Vectors {
				if !v.Canonical {
					continue
				}
				n++
				if got := hex.EncodeToString(encodeVector(t, v.Message)); got != v.Hex {
					t.Errorf("%s %s: got %s want %s", file, v.Name, got, v.Hex)
				}
			}
		}
		if n == 0 {
			t.Fatal("no canonical client vector")
		}
	})
	t.Run("vectors.decode", func(t *testing.T) {
		for file, vf := range all {
			if vf.Direction != "server" {
				continue
			}
			for _, v := range vf.Vectors {
				b, _ := hex.DecodeString(v.Hex)
				m, err := decodeServer(b)
				if err != nil {
					t.Fatalf("%s %s: %v", file, v.Name, err)
				}
				checkDecoded(t, file+" "+v.Name, m, v.Message)
			}
		}
	})
}

// checkDecoded compares the fields the decoder knows with the vector's.
func checkDecoded(t *testing.T, name string, m *serverMsg, raw json.RawMessage) {
	var w map[string]json.RawMessage
	_ = json.Unmarshal(raw, &w)
	var typ string
	_ = json.Unmarshal(w["type"], &typ)
	if m.Type != typ {
		t.Errorf("%s: type %q", name, m.Type)
	}
	eq := func(field string, got any) {
		v, ok := w[field]
		if !ok {
			return
		}
		want := reflect.New(reflect.TypeOf(got)).Interface()
		if err := json.Unmarshal(v, want); err != nil {
			t.Errorf("%s: %s: %v", name, field, err)
			return
		}
		if !reflect.DeepEqual(reflect.ValueOf(want).Elem().Interface(), got) {
			t.Errorf("%s: %s = %v, want %s", name, field, got, v)
		}
	}
	if d, ok := w["data"]; ok && !bytes.Equal(binOf(t, d), m.Data) {
		t.Errorf("%s: data %x", name, m.Data)
	}
	eq("offset", m.Offset)
	eq("exitCode", m.ExitCode)
	eq("signal", m.Signal)
	eq("timedOut", m.TimedOut)
	eq("code", m.Code)
	eq("message", m.Message)
	eq("pid", m.Pid)
	eq("replayFrom", m.ReplayFrom)
	eq("replayTo", m.ReplayTo)
	eq("from", m.From)
	eq("to", m.To)
	eq("limits", m.Limits)
	if s, ok := w["session"]; ok {
		var want Session
		_ = json.Unmarshal(s, &want)
		if m.Session == nil || !reflect.DeepEqual(*m.Session, want) {
			t.Errorf("%s: session %+v", name, m.Session)
		}
	}
}
