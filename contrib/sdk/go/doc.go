// Package lodge is the Go client of lodged, the daemon that runs processes
// for remote clients inside a sandbox (protocol: lodge-protocol(7)).
//
//	sandbox, err := lodge.Connect(ctx, lodge.Config{}) // LODGE_URL, LODGE_TOKEN
//	result, err := sandbox.ExecCommand(ctx, "echo hello")
//
// Every call takes a context: cancelling it ends the call and closes its
// connection (an exec stream's process is then killed by the daemon).
// Errors from the daemon are typed, one per protocol code
// (*NotFoundError, *SpawnFailedError, ...), each matching its sentinel
// with errors.Is (ErrNotFound) and unwrapping to *APIError. A stream that
// ends without an exit message is ErrConnectionLost, never an exit.
// Attach handles resume by offset after a lost connection, delivering
// every byte once and reporting what the ring lost as a gap.
package lodge
