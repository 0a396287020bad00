package lodge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/vmihailenco/msgpack/v5"
)

// envVar is one env entry, in the order the message carries it.
type envVar struct{ Name, Value string }

// startFields are the fields of an exec stream's start message, in the
// canonical order of lodge-protocol.7; zero fields are not sent.
type startFields struct {
	Command        string
	Args           []string
	WorkDir        string
	Env            []envVar
	User           string
	TimeoutSeconds float64
	TTY            *bool
	Cols, Rows     int
}

func sortedEnv(m map[string]string) []envVar {
	env := make([]envVar, 0, len(m))
	for k, v := range m {
		env = append(env, envVar{k, v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env
}

// encoder writes client messages in the canonical encoding: only the
// fields set, integers and strings in their shortest forms, data as bin.
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

func newEncoder() *encoder {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}

func (e *encoder) bytes() []byte { return e.buf.Bytes() }

func (e *encoder) str(s string)    { _ = e.enc.EncodeString(s) }
func (e *encoder) integer(n int64) { _ = e.enc.EncodeInt(n) }

func (e *encoder) number(f float64) {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		e.integer(int64(f))
		return
	}
	_ = e.enc.EncodeFloat64(f)
}

func encodeStdin(data []byte) []byte {
	e := newEncoder()
	_ = e.enc.EncodeMapLen(2)
	e.str("type")
	e.str("stdin")
	e.str("data")
	_ = e.enc.EncodeBytes(data)
	return e.bytes()
}

// stdinOverhead bounds the bytes a stdin message adds around its data.
const stdinOverhead = 32

func encodeType(t string) []byte {
	e := newEncoder()
	_ = e.enc.EncodeMapLen(1)
	e.str("type")
	e.str(t)
	return e.bytes()
}

func encodeResize(cols, rows int) []byte {
	e := newEncoder()
	_ = e.enc.EncodeMapLen(3)
	e.str("type")
	e.str("resize")
	e.str("cols")
	e.integer(int64(cols))
	e.str("rows")
	e.integer(int64(rows))
	return e.bytes()
}

// encodeSignal sends a name as a str and a number (e.g. "9" given as
// SignalNumber) as an integer.
func encodeSignal(name string, number int, isNumber bool) []byte {
	e := newEncoder()
	_ = e.enc.EncodeMapLen(2)
	e.str("type")
	e.str("signal")
	e.str("signal")
	if isNumber {
		e.integer(int64(number))
	} else {
		e.str(name)
	}
	return e.bytes()
}

func encodeStart(f startFields) []byte {
	n := 1
	count := func(set bool) {
		if set {
			n++
		}
	}
	count(f.Command != "")
	count(f.Args != nil)
	count(f.WorkDir != "")
	count(f.Env != nil)
	count(f.User != "")
	count(f.TimeoutSeconds != 0)
	count(f.TTY != nil)
	count(f.Cols != 0)
	count(f.Rows != 0)
	e := newEncoder()
	_ = e.enc.EncodeMapLen(n)
	e.str("type")
	e.str("start")
	if f.Command != "" {
		e.str("command")
		e.str(f.Command)
	}
	if f.Args != nil {
		e.str("args")
		_ = e.enc.EncodeArrayLen(len(f.Args))
		for _, a := range f.Args {
			e.str(a)
		}
	}
	if f.WorkDir != "" {
		e.str("workDir")
		e.str(f.WorkDir)
	}
	if f.Env != nil {
		e.str("env")
		_ = e.enc.EncodeMapLen(len(f.Env))
		for _, v := range f.Env {
			e.str(v.Name)
			e.str(v.Value)
		}
	}
	if f.User != "" {
		e.str("user")
		e.str(f.User)
	}
	if f.TimeoutSeconds != 0 {
		e.str("timeoutSeconds")
		e.number(f.TimeoutSeconds)
	}
	if f.TTY != nil {
		e.str("tty")
		_ = e.enc.EncodeBool(*f.TTY)
	}
	if f.Cols != 0 {
		e.str("cols")
		e.integer(int64(f.Cols))
	}
	if f.Rows != 0 {
		e.str("rows")
		e.integer(int64(f.Rows))
	}
	return e.bytes()
}

// serverMsg is a decoded server message: the fields lodged sends, keys it
// does not know ignored.
type serverMsg struct {
	Type       string
	Data       []byte
	Offset     int64
	ExitCode   *int
	Signal     *string
	TimedOut   bool
	Code       string
	Message    string
	Pid        int
	Session    *Session
	ReplayFrom int64
	ReplayTo   int64
	From, To   int64
	Limits     map[string]int
}

// decodeServer decodes one message; Data is a slice of b, not a copy.
func decodeServer(b []byte) (*serverMsg, error) {
	r := bytes.NewReader(b)
	d := msgpack.NewDecoder(r)
	n, err := d.DecodeMapLen()
	if err != nil {
		return nil, fmt.Errorf("lodge: bad server message: %w", err)
	}
	m := &serverMsg{}
	for i := 0; i < n; i++ {
		key, err := d.DecodeString()
		if err != nil {
			return nil, fmt.Errorf("lodge: bad server message key: %w", err)
		}
		switch key {
		case "type":
			m.Type, err = d.DecodeString()
		case "data":
			m.Data, err = binInPlace(d, r, b)
		case "offset":
			m.Offset, err = d.DecodeInt64()
		case "replayFrom":
			m.ReplayFrom, err = d.DecodeInt64()
		case "replayTo":
			m.ReplayTo, err = d.DecodeInt64()
		case "from":
			m.From, err = d.DecodeInt64()
		case "to":
			m.To, err = d.DecodeInt64()
		case "pid":
			m.Pid, err = d.DecodeInt()
		case "code":
			m.Code, err = d.DecodeString()
		case "message":
			m.Message, err = d.DecodeString()
		case "timedOut":
			m.TimedOut, err = d.DecodeBool()
		case "exitCode":
			var v any
			if v, err = d.DecodeInterface(); err == nil && v != nil {
				c, ok := toInt(v)
				if !ok {
					err = fmt.Errorf("exitCode of type %T", v)
				}
				m.ExitCode = &c
			}
		case "signal":
			var v any
			if v, err = d.DecodeInterface(); err == nil && v != nil {
				s := fmt.Sprint(v)
				m.Signal = &s
			}
		case "session", "limits":
			var v any
			if v, err = d.DecodeInterface(); err == nil {
				var j []byte
				if j, err = json.Marshal(v); err == nil {
					if key == "session" {
						m.Session = &Session{}
						err = json.Unmarshal(j, m.Session)
					} else {
						_ = json.Unmarshal(j, &m.Limits)
					}
				}
			}
		default:
			err = d.Skip()
		}
		if err != nil {
			return nil, fmt.Errorf("lodge: bad server message field %q: %w", key, err)
		}
	}
	return m, nil
}

// binInPlace decodes a bin (or nil) as the slice of b that holds it: the
// decoder reads b through r unbuffered, so r's position is the decoder's.
func binInPlace(d *msgpack.Decoder, r *bytes.Reader, b []byte) ([]byte, error) {
	n, err := d.DecodeBytesLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > r.Len() {
		return nil, io.ErrUnexpectedEOF
	}
	off := len(b) - r.Len()
	if _, err := r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, err
	}
	return b[off : off+n : off+n], nil
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int8:
		return int(x), true
	case int16:
		return int(x), true
	case int32:
		return int(x), true
	case int64:
		return int(x), true
	case uint8:
		return int(x), true
	case uint16:
		return int(x), true
	case uint32:
		return int(x), true
	case uint64:
		return int(x), true
	}
	return 0, false
}
