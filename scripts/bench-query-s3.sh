#!/usr/bin/env bash
# Counts the S3 requests of a history query over 90 compacted days, for two
# history sizes, against a local VersityGW (issue 15): starts the pinned
# versitygw (make tools installs it) on 127.0.0.1 with a temporary posix
# directory, runs `benchfleet bench query` into a fresh bucket per size,
# prints its report lines, and stops the server.
#
# Usage: scripts/bench-query-s3.sh [RESULTS ...]     (default: 10000 100000)
# Env:   BENCHFLEET (default: go run ./cmd/benchfleet), BENCHFLEET_VERSITYGW
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
gw="${BENCHFLEET_VERSITYGW:-$root/.tools/bin/versitygw}"
[[ -x "$gw" ]] || { echo "bench-query-s3: $gw missing (run make tools)" >&2; exit 1; }
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10000 100000)
if [[ -n "${BENCHFLEET:-}" ]]; then bf=("$BENCHFLEET"); else
	go build -o "${TMPDIR:-/tmp}/benchfleet-bench-s3" ./cmd/benchfleet
	bf=("${TMPDIR:-/tmp}/benchfleet-bench-s3")
fi
dir="$(mktemp -d "${TMPDIR:-/tmp}/benchfleet-s3bench.XXXXXX")"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mkdir -p "$dir/data" "$dir/meta"
export AWS_ACCESS_KEY_ID="bench$RANDOM$RANDOM" AWS_SECRET_ACCESS_KEY="secret$RANDOM$RANDOM$RANDOM" AWS_EC2_METADATA_DISABLED=true
ROOT_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" ROOT_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
	"$gw" --port "127.0.0.1:$port" --quiet posix --sidecar "$dir/meta" "$dir/data" >"$dir/gw.log" 2>&1 &
gwpid=$!
trap 'kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	sleep 0.1
done
for n in "${sizes[@]}"; do
	echo "== $n results over 90 days, query --model resnet50 --since 90d"
	"${bf[@]}" bench query --results "$n" --days 90 --since 90d --repeat 1 \
		--store "s3://bench-$n?endpoint=http://127.0.0.1:$port&path_style=true&create=true&region=us-east-1"
done
