// Seed example: Exec, One-shot exec. The seed's lines as written; added: the imports, ctx,
// the line obtaining sandbox, and _ = result2 (Go refuses an unused variable).
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

result, err := sandbox.ExecCommand(ctx, "echo hello")
if err != nil { log.Fatal(err) }
fmt.Println(result.Stdout)

// With full options
result2, err := sandbox.Exec(ctx, sdktypes.ExecOptions{
    Command:        "node index.js",
    Workdir:        "/workspace",
    Env:            map[string]string{"NODE_ENV": "production"},
    TimeoutSeconds: 30,
})
_ = result2
}
