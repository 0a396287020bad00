// Seed example: Exec, Sending signals (on the handle of Interactive shell with PTY). The seed's lines as written; added: the imports, ctx,
// the line obtaining sandbox.
package main

import (
	"context"
	"fmt"
	"log"

	lodge "lodge.dev/sdk/go"
	sdktypes "lodge.dev/sdk/go"
)

func main() {
	ctx := context.Background()
	sandbox, err := lodge.Connect(ctx, lodge.Config{})
	if err != nil { log.Fatal(err) }

handle, err := sandbox.ExecStream(ctx, sdktypes.ExecStreamOptions{
    Command: "bash",
    TTY:     true,
    Cols:    120,
    Rows:    40,
    OnStdout: func(chunk []byte) { fmt.Print(string(chunk)) },
})
if err != nil { log.Fatal(err) }

if err := handle.WriteString("echo hello\n"); err != nil { log.Fatal(err) }


handle.Signal("INT")
handle.Signal("TERM")

exit, err := handle.Wait()
fmt.Println(exit.Code, exit.Signal)

}
