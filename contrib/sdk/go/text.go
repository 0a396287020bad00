package lodge

import "strings"

// TextDecoder turns a stream's bytes into text incrementally: a UTF-8
// character split across chunks is held until its last byte comes, and
// invalid bytes become U+FFFD. Use one per stream.
type TextDecoder struct{ pending []byte }

// Decode returns the text of chunk, less an unfinished character at its
// end, which is kept for the next call.
func (d *TextDecoder) Decode(chunk []byte) string {
	b := chunk
	if len(d.pending) > 0 {
		b = append(d.pending, chunk...)
		d.pending = nil
	}
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		c := b[i]
		if c < 0x80 {
			break
		}
		if c >= 0xC0 {
			need := 2
			if c >= 0xF0 {
				need = 4
			} else if c >= 0xE0 {
				need = 3
			}
			if len(b)-i < need {
				cut = i
			}
			break
		}
	}
	if cut < len(b) {
		d.pending = append([]byte(nil), b[cut:]...)
	}
	return strings.ToValidUTF8(string(b[:cut]), "\uFFFD")
}

// Flush returns what is held at the end of the stream (an unfinished
// character, as U+FFFD).
func (d *TextDecoder) Flush() string {
	s := strings.ToValidUTF8(string(d.pending), "\uFFFD")
	d.pending = nil
	return s
}

// Text adapts a text callback to an output callback (OnStdout, OnStderr)
// with its own TextDecoder.
func Text(f func(text string)) func(chunk []byte) {
	d := &TextDecoder{}
	return func(chunk []byte) {
		if s := d.Decode(chunk); s != "" {
			f(s)
		}
	}
}
