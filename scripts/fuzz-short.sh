#!/usr/bin/env bash
# Runs every fuzz target of the module briefly (FUZZTIME each, default 4s),
# so the decoders of outside input are fuzzed on every CI run. Longer runs:
#   go test -run '^$' -fuzz '^FuzzParseMatrix$' -fuzztime 10m ./producer
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${FUZZTIME:-4s}"
count=0
while IFS= read -r file; do
	pkg="./$(dirname "$file")"
	for fn in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		echo "fuzz $pkg $fn ($fuzztime)"
		go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/benchfleet-fuzz.log 2>&1 || { cat /tmp/benchfleet-fuzz.log; exit 1; }
		count=$((count + 1))
	done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort)
echo "fuzz: $count passed, 0 failed"
