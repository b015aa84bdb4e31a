#!/usr/bin/env bash
# Runs every fuzz target of the module briefly (FUZZTIME each, default 4s),
# so the decoders of outside input are fuzzed on every CI run. Longer runs:
#   go test -run '^$' -fuzz '^FuzzParseMatrix$' -fuzztime 10m ./producer
#
# A run whose only failure is the fuzzing engine's own "context deadline
# exceeded" (the coordinator's deadline hit while a worker was busy, on a
# loaded machine; no input failed) is run once more; a real failure prints
# the failing input and stops.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${FUZZTIME:-4s}"
log="$(mktemp "${TMPDIR:-/tmp}/benchfleet-fuzz.XXXXXX")"
trap 'rm -f "$log"' EXIT
count=0
fuzz() { go test -run '^$' -fuzz "^$1\$" -fuzztime "$fuzztime" "$2" >"$log" 2>&1; }
engineDeadline() { grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; }
while IFS= read -r file; do
	pkg="./$(dirname "$file")"
	for fn in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		echo "fuzz $pkg $fn ($fuzztime)"
		if ! fuzz "$fn" "$pkg"; then
			if engineDeadline; then
				echo "fuzz $pkg $fn: the engine's deadline, not an input; once more"
				fuzz "$fn" "$pkg" || { cat "$log"; exit 1; }
			else
				cat "$log"
				exit 1
			fi
		fi
		count=$((count + 1))
	done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort)
echo "fuzz: $count passed, 0 failed"
