package lodge

import (
	"encoding/json"
	"errors"
	"fmt"
)

// APIError is an error reported by lodged: an HTTP reply that is not 2xx,
// a refused WebSocket upgrade, or an error message on an open WebSocket
// (Status is then 0). Each protocol code has its own type embedding
// *APIError (NotFoundError, SpawnFailedError, ...); an unknown code is a
// plain *APIError, to be treated like internal.
type APIError struct {
	Code    string // the protocol's code, e.g. "not_found"
	Status  int    // the HTTP status, 0 for a WebSocket error message
	Message string // the daemon's message, for people
}

func (e *APIError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("lodge: %s (%d): %s", e.Code, e.Status, e.Message)
	}
	return fmt.Sprintf("lodge: %s: %s", e.Code, e.Message)
}

// Is matches the sentinels ErrBadRequest, ErrNotFound, ... by code.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Status == 0 && t.Message == "" && t.Code == e.Code
}

// The typed errors, one per protocol code. Each unwraps to its *APIError.
type (
	BadRequestError      struct{ *APIError }
	UnauthorizedError    struct{ *APIError }
	ForbiddenError       struct{ *APIError }
	NotFoundError        struct{ *APIError }
	ConflictError        struct{ *APIError }
	PayloadTooLargeError struct{ *APIError }
	SpawnFailedError     struct{ *APIError }
	UnavailableError     struct{ *APIError }
	InternalError        struct{ *APIError }
)

func (e *BadRequestError) Unwrap() error      { return e.APIError }
func (e *UnauthorizedError) Unwrap() error    { return e.APIError }
func (e *ForbiddenError) Unwrap() error       { return e.APIError }
func (e *NotFoundError) Unwrap() error        { return e.APIError }
func (e *ConflictError) Unwrap() error        { return e.APIError }
func (e *PayloadTooLargeError) Unwrap() error { return e.APIError }
func (e *SpawnFailedError) Unwrap() error     { return e.APIError }
func (e *UnavailableError) Unwrap() error     { return e.APIError }
func (e *InternalError) Unwrap() error        { return e.APIError }

// Sentinels for errors.Is, one per protocol code.
var (
	ErrBadRequest      = &APIError{Code: "bad_request"}
	ErrUnauthorized    = &APIError{Code: "unauthorized"}
	ErrForbidden       = &APIError{Code: "forbidden"}
	ErrNotFound        = &APIError{Code: "not_found"}
	ErrConflict        = &APIError{Code: "conflict"}
	ErrPayloadTooLarge = &APIError{Code: "payload_too_large"}
	ErrSpawnFailed     = &APIError{Code: "spawn_failed"}
	ErrUnavailable     = &APIError{Code: "unavailable"}
	ErrInternal        = &APIError{Code: "internal"}
)

// ErrConnectionLost is the error of a stream that ended without an exit
// message: never a success, never exit code 0. It wraps the cause.
var ErrConnectionLost = errors.New("lodge: connection lost before exit")

// ErrDetached is what an attach handle's Wait returns after Detach.
var ErrDetached = errors.New("lodge: detached")

// ErrClosed is the cause of ErrConnectionLost after the caller's Close.
var ErrClosed = errors.New("lodge: closed by the client")

// GapError is the error of a strict attach (StrictGaps) when output from
// From to To was lost from the ring before it could be delivered.
type GapError struct{ From, To int64 }

func (e *GapError) Error() string {
	return fmt.Sprintf("lodge: output lost from offset %d to %d", e.From, e.To)
}

// newAPIError gives the typed error for a protocol code.
func newAPIError(code string, status int, message string) error {
	a := &APIError{Code: code, Status: status, Message: message}
	switch code {
	case "bad_request":
		return &BadRequestError{a}
	case "unauthorized":
		return &UnauthorizedError{a}
	case "forbidden":
		return &ForbiddenError{a}
	case "not_found":
		return &NotFoundError{a}
	case "conflict":
		return &ConflictError{a}
	case "payload_too_large":
		return &PayloadTooLargeError{a}
	case "spawn_failed":
		return &SpawnFailedError{a}
	case "unavailable":
		return &UnavailableError{a}
	case "internal":
		return &InternalError{a}
	}
	return a
}

// errorFromReply decodes an error reply body; a body that is not the
// protocol's shape still gives an error with the status.
func errorFromReply(status int, body []byte) error {
	var r struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || r.Error.Code == "" {
		msg := string(body)
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &APIError{Code: "internal", Status: status, Message: msg}
	}
	return newAPIError(r.Error.Code, status, r.Error.Message)
}

func connectionLost(cause error) error {
	if cause == nil {
		return ErrConnectionLost
	}
	return fmt.Errorf("%w: %w", ErrConnectionLost, cause)
}
