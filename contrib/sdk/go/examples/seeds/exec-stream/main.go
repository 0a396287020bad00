// Seed example: Exec, Live streaming output. The seed's lines as written; added: the imports, ctx,
// the line obtaining sandbox.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	lodge "lodge.dev/sdk/go"
	sdktypes "lodge.dev/sdk/go"
)

func main() {
	ctx := context.Background()
	sandbox, err := lodge.Connect(ctx, lodge.Config{})
	if err != nil { log.Fatal(err) }

handle, err := sandbox.ExecStream(ctx, sdktypes.ExecStreamOptions{
    Command: "npm install",
    Workdir: "/workspace",
    OnStdout: func(chunk []byte) { os.Stdout.Write(chunk) },
    OnStderr: func(chunk []byte) { os.Stderr.Write(chunk) },
})
if err != nil { log.Fatal(err) }

exit, err := handle.Wait()
fmt.Println(exit.Code, exit.Signal)
}
