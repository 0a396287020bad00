// Seed example: Sessions, session log (after Create a Session). The seed's lines as written; added: the imports, ctx,
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

session, err := sandbox.CreateSession(ctx, sdktypes.CreateSessionOptions{
    Name:    "shell",
    Command: "bash",
    Workdir: "/workspace",
    Pty:     true,
    Cols:    120,
    Rows:    40,
})
if err != nil { log.Fatal(err) }

fmt.Println(session.ID)


log, err := sandbox.SessionLog(ctx, session.ID)
fmt.Println(string(log))

}
