// Seed example: Sessions, Attach to a Session (after Create a Session). The seed's lines as written; added: the imports, ctx,
// the line obtaining sandbox.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	lodge "lodge.dev/sdk/go"
	microvm "lodge.dev/sdk/go"
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


attached, err := sandbox.AttachSession(ctx, session.ID, microvm.SessionAttachOptions{
    Cols:     120,
    Rows:     40,
    OnStdout: func(chunk []byte) { os.Stdout.Write(chunk) },
})
if err != nil { log.Fatal(err) }

_ = attached.WriteString("echo hello\n")
code, signal, err := attached.Wait()
fmt.Println(code, signal, err)

}
