# Go SDK: sourced by tests/sdk/run.sh in contrib/sdk/go ($kit, $LODGED set).
# Modules come from the Go proxy, pinned by go.sum; go vet, then the whole
# suite with the race detector against a private lodged.
export GOFLAGS=-mod=readonly
go version &&
go vet ./... &&
"$kit/with-lodged" --lodged "$LODGED" -- go test -race -count=1 -timeout 270s ./...
