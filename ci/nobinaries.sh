#!/usr/bin/env bash
# ci/nobinaries.sh — fails when git tracks a build output: an ELF file,
# or an executable file that is not a script (no "#!" line). Build
# outputs go to the ignored bin/ or .cache/ (make test runs this).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=()
while IFS= read -r -d '' entry; do
	mode=${entry%% *} path=${entry#*$'\t'}
	[[ -f $path ]] || continue
	magic=$(head -c 4 "$path" | od -An -c | tr -d ' \n')
	if [[ $magic == 177ELF ]]; then
		bad+=("$path (ELF)")
	elif [[ $mode == 100755 && $magic != '#!'* ]]; then
		bad+=("$path (executable, not a script)")
	fi
done < <(git ls-files -s -z)
if ((${#bad[@]} > 0)); then
	printf 'nobinaries: git tracks a build output: %s\n' "${bad[@]}" >&2
	echo "nobinaries: remove it (git rm --cached) and build into bin/ (ignored)" >&2
	exit 1
fi
echo "nobinaries: no tracked binary in $(git ls-files | wc -l) files"
