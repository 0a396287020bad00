module lodge.dev/sdk/go

go 1.23

require (
	github.com/coder/websocket v1.8.14
	github.com/vmihailenco/msgpack/v5 v5.4.1
)

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
