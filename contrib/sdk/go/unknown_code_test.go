package lodge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// error.unknown_code: a code the SDK does not know is the generic
// *APIError with the code, the status and the message.
func TestUnknownCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(418)
		_, _ = w.Write([]byte(`{"error":{"code":"teapot","message":"m"}}`))
	}))
	defer srv.Close()
	s, err := Connect(context.Background(), Config{URL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Health(context.Background())
	var a *APIError
	if !errors.As(err, &a) || a.Code != "teapot" || a.Status != 418 || a.Message != "m" {
		t.Fatal(err)
	}
	if errors.Is(err, ErrInternal) || errors.Is(err, ErrNotFound) {
		t.Fatal("an unknown code matched a known one")
	}
}
