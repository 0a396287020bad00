package lodge_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	lodge "lodge.dev/sdk/go"
)

func ExampleSandbox_ExecCommand() {
	ctx := context.Background()
	sandbox, err := lodge.Connect(ctx, lodge.Config{})
	if err != nil {
		log.Fatal(err)
	}
	result, err := sandbox.ExecCommand(ctx, "echo hello")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(result.Stdout, result.ExitCode)
}

func ExampleSandbox_ExecStream() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a cancelled ctx ends the stream; the daemon kills the process
	sandbox, _ := lodge.Connect(ctx, lodge.Config{})
	handle, err := sandbox.ExecStream(ctx, lodge.ExecStreamOptions{
		Args:     []string{"cat"},
		OnStdout: lodge.Text(func(s string) { fmt.Print(s) }),
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = handle.WriteString("hello\n")
	_ = handle.CloseStdin()
	exit, err := handle.Wait()
	if errors.Is(err, lodge.ErrConnectionLost) {
		log.Fatal("the stream ended without an exit: ", err)
	}
	fmt.Println(exit.Code, exit.Signal)
}

func ExampleSandbox_AttachSession() {
	ctx := context.Background()
	sandbox, _ := lodge.Connect(ctx, lodge.Config{})
	attach, err := sandbox.AttachSession(ctx, "shell", lodge.SessionAttachOptions{
		OnStdout: func(chunk []byte) { os.Stdout.Write(chunk) },
		OnLive:   func(offset int64) { log.Printf("replay ends at %d", offset) },
		OnGap:    func(from, to int64) { log.Printf("lost output %d..%d", from, to) },
	})
	var nf *lodge.NotFoundError
	if errors.As(err, &nf) {
		log.Fatal("no such session: ", nf.Message)
	}
	if err != nil {
		log.Fatal(err)
	}
	code, signal, err := attach.Wait()
	fmt.Println(code, signal, err)
}
