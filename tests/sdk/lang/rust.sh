# Sourced by tests/sdk/run.sh in contrib/sdk/rust ($kit: tests/sdk,
# LODGED exported): the crate's locked dependencies from crates.io,
# rustfmt and clippy with warnings as errors, then the suite (the seed
# examples, the conformance scenarios, the vectors) against a private
# lodged.  Non-zero on any failure.  The build directory is outside the
# tree, so a rerun is incremental.
set -eu
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
	PATH=$HOME/.cargo/bin:$PATH
fi
export CARGO_TARGET_DIR=${LODGE_RUST_TARGET:-/var/tmp/lodge-sdk-rust-target}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --no-run
"$kit/with-lodged" --lodged "$LODGED" -- cargo test --locked -- --test-threads=2
